import Foundation
import Testing
import TokenetRPC
import TokenetWire

/// `--plaintext` given for a node that speaks TLS fails as the node not reached, exit status 1, as the help says of a
/// node that cannot be reached and as the opposite mistake (TLS to a plaintext node, "it does not speak TLS") fails:
/// the node hangs up before it greets, and that came out as a call's UNAVAILABLE, with status 78.
@Suite(.timeLimit(.minutes(2))) struct WrongTransportTests {
    @Test(arguments: [
        ["call", "tokenet.health.v1.Health/Check"], ["list"], ["describe", "tokenet.health.v1.Health"],
    ])
    func plaintextToATLSNodeIsANodeNotReached(arguments: [String]) async throws {
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws in HealthV1.HealthCheckResponse() }
        ReflectionService(router: router).register(on: &router)
        var address = ""
        let result = try await runTokenet(servedOverTLSBy: router) {
            address = $0
            return [arguments[0], $0] + arguments.dropFirst() + ["--plaintext", "--deadline", "20s"]
        }
        #expect(result.status == 1, "\(result.stderr)")
        // The loss is worded "connection lost" or "the connection is closed" depending on which end of the
        // connection notices first.
        #expect(result.stderr.hasPrefix("tokenet: cannot connect to \(address): "), "\(result.stderr)")
        #expect(
            result.stderr.hasSuffix(
                "the peer closed the connection before its hello (if the peer uses TLS, connect without --plaintext)\n"),
            "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}
