import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// What `-H` sends, as an in-process server's handler receives it.
@Suite(.timeLimit(.minutes(3))) struct InspectMetadataTests {
    /// Serves Health/Check; each call fails with a message listing the metadata it received (`key=text:VALUE` or
    /// `key=binary:HEX`), so the test can read it from the command's standard error.
    private static func received(_ headers: [String]) async throws -> ProcessResult {
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, context) async throws -> HealthV1.HealthCheckResponse in
            let entries = context.metadata.entries.filter { $0.key.hasPrefix("x-") }.map { entry in
                switch entry.value {
                case .text(let text): "\(entry.key)=text:\(text)"
                case .binary(let data): "\(entry.key)=binary:\(data.map { String(format: "%02x", $0) }.joined())"
                }
            }
            throw RPCError(.failedPrecondition, entries.joined(separator: " "))
        }
        return try await runTokenet(servedBy: router) { address in
            ["call", address, "tokenet.health.v1.Health/Check", "--plaintext", "--deadline", "20s"]
                + headers.flatMap { ["-H", $0] }
        }
    }

    /// A key ending in -bin carries bytes written in base64 (standard or URL-safe, padding optional), as in grpcurl;
    /// such a value used to go out as text, and no binary entry could be sent at all.
    @Test func aBinaryKeyTakesBase64AndSendsTheBytes() async throws {
        let result = try await Self.received(["x-id-bin: AQID", "X-Raw-Bin: _-8", "x-name: AQID"])
        #expect(result.status == 64 + 9, "\(result.stderr)")
        #expect(
            untraced(result.stderr)
                == "ERROR: FAILED_PRECONDITION: x-id-bin=binary:010203 x-raw-bin=binary:ffef x-name=text:AQID\n")
    }

    /// `=` pads only the end: `====` and `AQ=D` once went out as bytes nobody wrote (one zero byte, two bytes).
    @Test(arguments: ["@@@", "====", "AQ=D", "AQID=="])
    func aBinaryKeyWithAValueThatIsNotBase64IsAUsageError(value: String) async throws {
        let result = try await Self.received(["x-id-bin: \(value)"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("call: -H: 'x-id-bin' ends in -bin, so its value is bytes written in base64"),
            "\(result.stderr)")
    }

    /// A trace id whose digits the logs take for a card number is carried, but shows masked in the nodes' logs:
    /// said, so that the person does not look for it there in vain.
    @Test func aTraceIDTheLogsWouldMaskIsNamed() async throws {
        let id = "f0000000000000000000000000000001"
        let result = try await Self.received(["tokenet-trace-id: \(id)", "x-a: b"])
        #expect(result.status == 64 + 9, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix(
                "tokenet: call: note: the tokenet-trace-id holds digits the nodes' logs mask as a possible card "
                    + "number (it shows as 'f***************************0001' there)"),
            "\(result.stderr)")
        // Digits the logs leave as they are (no card number among them: the Luhn check fails) are not named.
        for id in ["4bf92f3577b34da6", "4bf92f3577b3412345678901234da6aa"] {
            let plain = try await Self.received(["tokenet-trace-id: \(id)"])
            #expect(!plain.stderr.contains("note:"), "\(plain.stderr)")
        }
    }

    /// The byte a syntax error names counts the whitespace before the request: it counted from the first
    /// character that was not whitespace, two bytes short for a file that starts with an empty line.
    @Test func aSyntaxErrorIsPlacedInTheInputAsGiven() async throws {
        for (data, message) in [
            ("   x", "unexpected character 'x' at byte 3"), ("  {\"service\":}", "at byte 13"),
            ("\n\n{\"service\": tru}", "at byte 14"),
        ] {
            let result = try await runTokenet(servedBy: RPCRouter(), stdin: data) { address in
                ["call", address, "tokenet.health.v1.Health/Check", "--plaintext", "-d", "@"]
            }
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.contains(message), "\(result.stderr)")
        }
    }

    /// A request larger than a node takes is the command line's mistake (status 2, naming -d), found before it is
    /// sent: it was the client runtime's RESOURCE_EXHAUSTED (status 72).
    @Test func aRequestLargerThanANodeTakesIsAUsageError() async throws {
        let service = String(repeating: "a", count: 1_100_000)
        let result = try await runTokenet(servedBy: RPCRouter(), stdin: "{\"service\": \"\(service)\"}") { address in
            ["call", address, "tokenet.health.v1.Health/Check", "--plaintext", "-d", "@"]
        }
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix(
                "tokenet: call: request (-d) encodes to 1100004 bytes; a Tokenet node takes messages of at most "
                    + "1048576 bytes\n"), "\(result.stderr)")
    }

    /// A node that answers UNAVAILABLE because its own link to another node went silent says so in the keepalive's
    /// words; the CLI prints the node's status as it is, where it told the person that the node it called had
    /// stopped answering (that node answered).
    @Test func anUpstreamSilencePassedOnIsNotTakenForTheNodesOwn() async throws {
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws -> HealthV1.HealthCheckResponse in
            throw RPCError(.unavailable, "connection closed: no answer to keepalive ping")
        }
        let result = try await runTokenet(servedBy: router) { address in
            ["call", address, "tokenet.health.v1.Health/Check", "--plaintext", "--deadline", "20s"]
        }
        #expect(result.status == 64 + 14, "\(result.stderr)")
        #expect(untraced(result.stderr) == "ERROR: UNAVAILABLE: connection closed: no answer to keepalive ping\n")
    }
}
