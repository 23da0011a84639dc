import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `--plaintext` is for debugging only, and the nodes say so loudly when they start with it; the CLI says it to a
/// person at a terminal too. A script or a pipe, whose every call would carry the line, is not told.
@Suite(.timeLimit(.minutes(3))) struct PlaintextWarningTests {
    static var router: RPCRouter {
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws in HealthV1.HealthCheckResponse() }
        ReflectionService(router: router).register(on: &router)
        return router
    }

    @Test func aPersonAtATerminalIsWarnedThatTLSIsOff() async throws {
        let result = try await runTokenet(servedBy: Self.router, atTerminal: true) { ["list", $0, "--plaintext"] }
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("tokenet: warning: --plaintext: TLS is off"), "\(result.stdout)")
        #expect(result.stdout.contains("tokenet.health.v1.Health"), "\(result.stdout)")
    }

    @Test func aScriptIsNotWarned() async throws {
        let result = try await runTokenet(servedBy: Self.router) { ["list", $0, "--plaintext"] }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }
}
