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
        let pki = DevelopmentPKI.shared
        let context = try TLSContext(
            configuration: .server(
                certificateChainFile: pki.path("wallet.pem"), privateKeyFile: pki.path("wallet.key"),
                trustedCAFile: pki.path("ca.pem")))
        let loop = try EventLoop(name: "went-away-test")
        let listener = try await TLSListener.bind(context: context, on: loop)
        let accepted = Mutex<TLSConnection?>(nil)
        var router = RPCRouter()
        router.unary(WalletV1.WalletLifecycle.changeCardState) { (_, _) async throws in
            // The node dies with the call in hand: its connection is reset.
            if let connection = accepted.withLock({ $0 }) { await connection.abort() }
            try await Task.sleep(for: .seconds(60))
            return WalletV1.WalletChangeCardStateResponse()
        }
        let server = RPCServer(router: router, handlersOnConnectionLoop: true)
        let serving = Task(executorPreference: loop) {
            for await connection in listener.connections {
                accepted.withLock { $0 = connection }
                Task(executorPreference: loop) { await server.serve(connection) }
            }
        }
        let address = "127.0.0.1:\(listener.port)"
        let result = try await offThePool {
            try runTokenet([
                "wallet", "suspend", address, "card-1", "--reason", "USER_REQUEST", "--cacert", pki.path("ca.pem"),
                "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"), "--deadline", "30s",
            ])
        }
        server.shutdown()
        serving.cancel()
        await listener.close()
        loop.shutdown()
        #expect(result.status == 64 + StatusCode.unavailable.rawValue, "\(result.stderr)")
        #expect(result.stderr.contains("UNAVAILABLE: connection lost"), "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "; the wallet-node at \(address) went away during the call, so what it was asked may or may not have "
                    + "been done: see its state once the node is back before running the command again"),
            "\(result.stderr)")
    }
}
