import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// Runs `tokenet call` against an in-process plaintext server whose handler ends calls with a chosen status, for the
/// statuses no node sends on purpose.
@Suite(.timeLimit(.minutes(3))) struct InspectStatusTests {
    /// Serves only Health/Check (no reflection, so the CLI uses the types it knows), ending each call with `code`.
    private static func callAServerAnswering(
        _ code: StatusCode, message: String = "a status from a later protocol", details: [WireV1.StatusDetail] = []
    ) async throws -> ProcessResult {
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws -> HealthV1.HealthCheckResponse in
            throw RPCError(code, message, details: details)
        }
        return try await runTokenet(servedBy: router) { address in
            ["call", address, "tokenet.health.v1.Health/Check", "--plaintext", "--deadline", "20s"]
        }
    }

    @Test func aKnownCodeExitsWith64PlusTheCode() async throws {
        let result = try await Self.callAServerAnswering(.failedPrecondition)
        #expect(result.status == 64 + 9, "\(result.stderr)")
        #expect(untraced(result.stderr) == "ERROR: FAILED_PRECONDITION: a status from a later protocol\n")
        // The call's trace id last, to find it in the nodes' logs without running it again with -v.
        let trace = try #require(result.stderr.split(separator: "\n").last)
        #expect(trace.hasPrefix("(trace ") && trace.hasSuffix(")") && trace.count > 9, "\(result.stderr)")
    }

    /// A node that answered UNAVAILABLE because its own peer left before its hello is an answer, not a node the
    /// CLI could not reach: the status and exit status 78, not "cannot connect" and 1.
    @Test func aNodesOwnPeerLeavingBeforeItsHelloIsTheNodesAnswer() async throws {
        let message =
            "the TSP's ChangeTokenState failed: connection lost: the peer closed the connection before its hello"
        let result = try await Self.callAServerAnswering(.unavailable, message: message)
        #expect(result.status == 64 + 14, "\(result.stderr)")
        #expect(untraced(result.stderr) == "ERROR: UNAVAILABLE: \(message)\n")
    }

    /// The details of a status print one per line under it: as JSON when this build knows their type, its secret
    /// fields masked, else by size alone; the peer's text in them is masked and escaped like the message.
    @Test func theDetailsOfAStatusArePrinted() async throws {
        let known = WireV1.StatusDetail(
            type: "tokenet.health.v1.HealthCheckResponse",
            value: Data(try HealthV1.HealthCheckResponse(status: .notServing).serializedBytes()))
        let unknown = WireV1.StatusDetail(type: "example.v1.Retry\n4761000010000009", value: Data([1, 2, 3]))
        // A type this build knows, with bytes that are not one: said so, not called an unknown type.
        let broken = WireV1.StatusDetail(type: "tokenet.health.v1.HealthCheckResponse", value: Data([0xFF, 0xFF]))
        let secret = WireV1.StatusDetail(
            type: "tokenet.tsp.v1.SubmitOtpRequest",
            value: Data(try TspV1.SubmitOtpRequest(digitalCardID: "DN1", code: "493817").serializedBytes()))
        let result = try await Self.callAServerAnswering(
            .unavailable, message: "later", details: [known, unknown, broken, secret])
        #expect(result.status == 64 + 14, "\(result.stderr)")
        #expect(
            untraced(result.stderr)
                == "ERROR: UNAVAILABLE: later\n"
                + "  detail tokenet.health.v1.HealthCheckResponse: {\"status\":\"SERVING_STATUS_NOT_SERVING\"}\n"
                + "  detail example.v1.Retry\\u{A}************0009: 3 bytes, a type this build does not know "
                + "(not shown)\n"
                + "  detail tokenet.health.v1.HealthCheckResponse: 2 bytes that are not a valid "
                + "tokenet.health.v1.HealthCheckResponse (not shown)\n"
                + "  detail tokenet.tsp.v1.SubmitOtpRequest: {\"digitalCardId\":\"DN1\",\"code\":\"***\"}\n")
    }

    /// The node's message is printed with its control characters escaped: an escape sequence in it (often quoted
    /// from the request) acted on the terminal, and a line break printed a line that looked like the CLI's own.
    @Test func controlCharactersInTheMessageAreEscaped() async throws {
        let result = try await Self.callAServerAnswering(
            .notFound, message: "no service \u{1B}[2Jx\nOK\u{7F} café")
        #expect(result.status == 64 + 5, "\(result.stderr)")
        #expect(untraced(result.stderr) == "ERROR: NOT_FOUND: no service \\u{1B}[2Jx\\u{A}OK\\u{7F} café\n")
    }

    /// A server may send a status message of megabytes: the first 1,024 characters are printed, then how many there
    /// were, where the whole message used to flood the terminal. Its control characters are escaped after the cut, so
    /// no escape sequence is cut in two.
    @Test func aLongMessageIsCutWithHowMuchWasCut() async throws {
        let message = "\u{1B}[2J" + String(repeating: "x", count: 4_996) + "\nEND"
        let result = try await Self.callAServerAnswering(.notFound, message: message)
        #expect(result.status == 64 + 5, "\(result.stderr)")
        let kept = "\\u{1B}[2J" + String(repeating: "x", count: 1_020)
        #expect(untraced(result.stderr) == "ERROR: NOT_FOUND: \(kept)... (5004 characters, the last 3980 cut)\n")
    }

    /// A card number in a status message (a server that echoes what it was sent) is masked, as the nodes mask the
    /// messages they send.
    @Test func aCardNumberInTheMessageIsMasked() async throws {
        let result = try await Self.callAServerAnswering(.notFound, message: "no card 4761 0000 1000 0009 here")
        #expect(result.status == 64 + 5, "\(result.stderr)")
        #expect(untraced(result.stderr) == "ERROR: NOT_FOUND: no card **** **** **** 0009 here\n")
    }

    /// A status without a message prints as its code alone; it used to end in a dangling ": ".
    @Test func aStatusWithoutAMessagePrintsItsCodeAlone() async throws {
        let result = try await Self.callAServerAnswering(.unavailable, message: "")
        #expect(result.status == 64 + 14, "\(result.stderr)")
        #expect(untraced(result.stderr) == "ERROR: UNAVAILABLE\n")
    }

    /// 64 + 192 is 256, which the shell sees as 0: the command used to report a failed call as a success.
    @Test(arguments: [192 as Int32, 17, -1])
    func aCodeOutsideTheGRPCCodesExitsAsUnknown(code: Int32) async throws {
        let result = try await Self.callAServerAnswering(StatusCode(rawValue: code))
        #expect(result.status == 64 + 2, "\(result.stderr)")
        #expect(untraced(result.stderr) == "ERROR: CODE_\(code): a status from a later protocol\n")
        #expect(result.stdout.isEmpty)
    }
}
