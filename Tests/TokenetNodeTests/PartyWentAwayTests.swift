import Foundation
import Synchronization
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

/// A node that goes away with a party command's call sent (killed, its machine gone) is named, with what that means:
/// the change may have been made. The bare "connection lost: read failed: …" named neither, and the change had been
/// made (a suspend, a delete, an activation).
@Suite(.timeLimit(.minutes(3))) struct PartyWentAwayTests {
    @Test func aNodeThatGoesAwayDuringTheCallIsNamedWithWhatMayHaveBeenDone() async throws {
        var router = RPCRouter()
        let accepted = Accepted()
        router.unary(WalletV1.WalletLifecycle.changeCardState) { (_, _) async throws in
            try await Self.goAway(accepted)
            return WalletV1.WalletChangeCardStateResponse()
        }
        let (result, address) = try await Self.run(router, as: "wallet", accepted) {
            ["wallet", "suspend", $0, "card-1", "--reason", "USER_REQUEST"]
        }
        #expect(result.status == 64 + StatusCode.unavailable.rawValue, "\(result.stderr)")
        #expect(result.stderr.contains("UNAVAILABLE: connection lost"), "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "; the wallet-node at \(address) went away during the call, so what it was asked may or may not have "
                    + "been done: see its state once the node is back before running the command again"),
            "\(result.stderr)")
    }

    /// A command that says already what may have been done (the issuer's token changes) still names the node.
    @Test func aCommandThatSaysWhatMayHaveBeenDoneStillNamesTheNode() async throws {
        var router = RPCRouter()
        let accepted = Accepted()
        router.unary(IssuerV1.IssuerCardCare.changeTokenStates) { (_, _) async throws in
            try await Self.goAway(accepted)
            return IssuerV1.IssuerChangeTokenStatesResponse()
        }
        let (result, address) = try await Self.run(router, as: "issuer", accepted) {
            ["issuer", "suspend-tokens", $0, "DNITHE000000000000000001", "--reason", "LOST_CARD"]
        }
        #expect(result.stderr.contains("the change may have reached the TSP"), "\(result.stderr)")
        #expect(result.stderr.contains("; the issuer-node at \(address) went away during the call"), "\(result.stderr)")
    }

    /// A node that stops as the command connects (its goaway before the call, or its close before the call was
    /// sent) is named, with what that means: nothing was done. It read "the node is shutting down (call not
    /// processed)" or "the connection closed before the call was sent", naming no node.
    @Test func aNodeThatStopsAsTheCommandConnectsIsNamedWithNothingDone() async throws {
        var router = RPCRouter()
        let reached = Mutex(false)
        router.unary(WalletV1.WalletLifecycle.changeCardState) { (_, _) async throws in
            reached.withLock { $0 = true }
            return WalletV1.WalletChangeCardStateResponse()
        }
        let (result, address) = try await Self.run(router, as: "wallet", Accepted(), stoppingAtAccept: true) {
            ["wallet", "suspend", $0, "card-1", "--reason", "USER_REQUEST"]
        }
        #expect(result.status == 64 + StatusCode.unavailable.rawValue || result.status == 1, "\(result.stderr)")
        #expect(!reached.withLock { $0 })
        if result.status != 1 {
            let refused = "; the wallet-node at \(address) is stopping, so nothing was done: run the command again"
            let closed = "; nothing was sent to the wallet-node at \(address), which closed the connection"
            #expect(
                result.stderr.contains(refused) || result.stderr.contains(closed), "\(result.stderr)")
        }
        #expect(!result.stderr.contains("may or may not have been done"), "\(result.stderr)")
    }

    /// The connection the server accepted, for its handler to reset.
    final class Accepted: Sendable {
        let connection = Mutex<TLSConnection?>(nil)
    }

    /// The node dies with the call in hand: its connection is reset.
    private static func goAway(_ accepted: Accepted) async throws {
        if let connection = accepted.connection.withLock({ $0 }) { await connection.abort() }
        try await Task.sleep(for: .seconds(60))
    }

    /// Runs `tokenet` (with the operator's certificate) against `router`, served over TLS with `role`'s certificate
    /// of the development PKI; the server's accepted connection goes to `accepted`.
    /// With `stoppingAtAccept`, the server shuts down as it accepts the command's connection.
    private static func run(
        _ router: RPCRouter, as role: String, _ accepted: Accepted, stoppingAtAccept: Bool = false,
        _ arguments: (String) -> [String]
    ) async throws -> (ProcessResult, String) {
        let pki = DevelopmentPKI.shared
        let context = try TLSContext(
            configuration: .server(
                certificateChainFile: pki.path("\(role).pem"), privateKeyFile: pki.path("\(role).key"),
                trustedCAFile: pki.path("ca.pem")))
        let loop = try EventLoop(name: "went-away-test")
        let listener = try await TLSListener.bind(context: context, on: loop)
        let server = RPCServer(router: router, handlersOnConnectionLoop: true)
        let serving = Task(executorPreference: loop) {
            for await connection in listener.connections {
                accepted.connection.withLock { $0 = connection }
                Task(executorPreference: loop) { await server.serve(connection) }
                if stoppingAtAccept { server.shutdown() }
            }
        }
        let address = "127.0.0.1:\(listener.port)"
        let command =
            arguments(address) + [
                "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
                "--deadline", "30s",
            ]
        let result = try await offThePool { try runTokenet(command) }
        server.shutdown()
        serving.cancel()
        await listener.close()
        loop.shutdown()
        return (result, address)
    }
}
