import Foundation
import Testing
import TokenetRPC
import TokenetWire

/// A party command given the address of another kind of node says so, naming the kind it reached and the kind it
/// needs, instead of the node's bare "unknown method"; the exit status stays UNIMPLEMENTED's (76).
@Suite(.timeLimit(.minutes(3))) struct WrongNodeTests {
    /// Runs `tokenet wallet cards` against a server with reflection that serves `register`'s methods.
    private static func walletCards(_ register: (inout RPCRouter) -> Void) async throws -> (ProcessResult, String) {
        var router = RPCRouter()
        register(&router)
        ReflectionService(router: router).register(on: &router)
        var address = ""
        let result = try await runTokenet(servedBy: router) {
            address = $0
            return ["wallet", "cards", $0, "--plaintext", "--deadline", "20s"]
        }
        return (result, address)
    }

    @Test func aTSPGivenForTheWalletIsNamed() async throws {
        let (result, address) = try await Self.walletCards { router in
            router.unary(TspV1.TspControl.listTokens) { (_, _) async throws in TspV1.ListTokensResponse() }
        }
        #expect(result.status == 64 + 12, "\(result.stderr)")
        #expect(
            result.stderrWithoutTrace
                == "ERROR: UNIMPLEMENTED: \(address) does not serve tokenet.wallet.v1.WalletControl, which a "
                + "wallet-node serves; it is a tsp-node: give the address of a wallet-node\n")
    }

    @Test func aServerOfNoPartyIsNamedSo() async throws {
        let (result, address) = try await Self.walletCards { _ in }
        #expect(result.status == 64 + 12, "\(result.stderr)")
        #expect(
            result.stderrWithoutTrace
                == "ERROR: UNIMPLEMENTED: \(address) does not serve tokenet.wallet.v1.WalletControl, which a "
                + "wallet-node serves; it serves no wallet, issuer or TSP service: give the address of a wallet-node\n")
    }

    /// A wallet-node that lacks the method (another build) is the right kind: its own message stands.
    @Test func aWalletWithoutTheMethodKeepsItsMessage() async throws {
        let (result, _) = try await Self.walletCards { router in
            router.unary(WalletV1.WalletAppToApp.openIssuerApp) { (_, _) async throws in
                WalletV1.OpenIssuerAppResponse()
            }
        }
        #expect(result.status == 64 + 12, "\(result.stderr)")
        #expect(
            result.stderrWithoutTrace
                == "ERROR: UNIMPLEMENTED: unknown method /tokenet.wallet.v1.WalletControl/ListCards\n")
    }

    /// A server without reflection cannot say what it is: its own message stands, rather than a guess that it
    /// serves no party's service.
    @Test func aServerWithoutReflectionKeepsItsMessage() async throws {
        var router = RPCRouter()
        router.unary(TspV1.TspControl.listTokens) { (_, _) async throws in TspV1.ListTokensResponse() }
        let result = try await runTokenet(servedBy: router) {
            ["wallet", "cards", $0, "--plaintext", "--deadline", "20s"]
        }
        #expect(result.status == 64 + 12, "\(result.stderr)")
        #expect(
            result.stderrWithoutTrace
                == "ERROR: UNIMPLEMENTED: unknown method /tokenet.wallet.v1.WalletControl/ListCards\n")
    }
}
