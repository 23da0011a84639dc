import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `tokenet call` of a method the node does not serve names the one meant when the node's reflection lists one by a
/// close name, or where the names are listed; the node's bare "unknown method" left the full name to be looked up.
/// The exit status stays UNIMPLEMENTED's (76).
@Suite(.timeLimit(.minutes(3))) struct CallSuggestionTests {
    /// Calls `method` on a server with reflection that serves Health/Check and Echo/Unary.
    private static func call(_ method: String) async throws -> (ProcessResult, String) {
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws in HealthV1.HealthCheckResponse() }
        router.unary(TestingV1.Echo.unary) { request, _ in request }
        ReflectionService(router: router).register(on: &router)
        var address = ""
        let result = try await runTokenet(servedBy: router) {
            address = $0
            return ["call", $0, method, "--plaintext", "--deadline", "20s"]
        }
        return (result, address)
    }

    @Test(arguments: [
        ("Health/Check", "tokenet.health.v1.Health/Check"),
        ("tokenet.health.v1.Health/Chek", "tokenet.health.v1.Health/Check"),
        ("tokenet.health.v1.Helth/Check", "tokenet.health.v1.Health/Check"),
        ("tokenet.health.v1.HEALTH/check", "tokenet.health.v1.Health/Check"),
        ("Echo/Unray", "tokenet.testing.v1.Echo/Unary"),
        ("v1.Health/Check", "tokenet.health.v1.Health/Check"),
        // A slash says where the method starts: a service in lower case is the node's to answer for.
        ("tokenet.health.v1.health/Check", "tokenet.health.v1.Health/Check"),
        ("health/check", "tokenet.health.v1.Health/Check"),
    ])
    func aCloseNameIsSuggested(method: String, meant: String) async throws {
        let (result, _) = try await Self.call(method)
        #expect(result.status == 64 + 12, "\(result.stderr)")
        #expect(untraced(result.stderr) == "ERROR: UNIMPLEMENTED: unknown method /\(method); did you mean \(meant)?\n")
        #expect(result.stdout.isEmpty)
    }

    /// With no close name, the message says where the names are listed: the service's methods, or the node's
    /// services (ADDR stands for the address called).
    @Test(arguments: [
        (
            "tokenet.health.v1.Health/Probe",
            "tokenet.health.v1.Health has no method of that name (tokenet list ADDR tokenet.health.v1.Health lists "
                + "them)"
        ),
        ("acme.v1.Widgets/Get", "this node serves no service acme.v1.Widgets (tokenet list ADDR lists them)"),
    ])
    func anUnknownNamePointsAtItsListing(method: String, pointer: String) async throws {
        let (result, address) = try await Self.call(method)
        #expect(result.status == 64 + 12, "\(result.stderr)")
        let expected = "ERROR: UNIMPLEMENTED: unknown method /\(method); \(pointer)\n"
        #expect(untraced(result.stderr) == expected.replacingOccurrences(of: "ADDR", with: address))
    }

    /// The service the command names is quoted with a card number in it masked to its last four digits, as a node
    /// masks it in its own message (this in-process server leaves its message as it is).
    @Test func anUnknownServiceDoesNotEchoACardNumber() async throws {
        let (result, address) = try await Self.call("A4761000010000009/Get")
        #expect(result.status == 64 + 12, "\(result.stderr)")
        #expect(
            untraced(result.stderr).hasSuffix(
                "; this node serves no service A************0009 (tokenet list \(address) lists them)\n"),
            "\(result.stderr)")
    }

    /// A name of four letters is taken for another only one slip away: `Wxyz` is not `Watch`.
    @Test func aNameTooFarFromAnyIsNotSuggested() async throws {
        let (result, _) = try await Self.call("tokenet.health.v1.Health/Wxyz")
        #expect(result.stderr.contains("has no method of that name"), "\(result.stderr)")
        #expect(!result.stderr.contains("did you mean"), "\(result.stderr)")
    }
}
