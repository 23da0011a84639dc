import Foundation
import Synchronization
import Testing
import TokenetRPC
import TokenetTestSupport
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

    /// Another node is named only for a symbol this build's schema has: a name no node has (a message in the wrong
    /// package, a service or method that does not exist) was pointed at the node its package named, which did not
    /// have it either. The node's own answer stands for those.
    @Test func onlyASymbolSomeNodeHasPointsAtAnotherNode() async throws {
        var router = RPCRouter()
        router.unary(TspV1.TspControl.listTokens) { (_, _) async throws in TspV1.ListTokensResponse() }
        ReflectionService(router: router).register(on: &router)
        let cases: [(arguments: [String], pointsElsewhere: Bool)] = [
            (["describe", "tokenet.wallet.v1.WalletControl"], true),
            (["describe", "tokenet.wallet.v1.ListWalletCardsRequest"], true),
            (["describe", "tokenet.wallet.v1.Bogus"], false),
            (["describe", "tokenet.issuer.v1.IssuerControl.Nope"], false),
            (["call", "tokenet.wallet.v1.WalletControl/ListCards"], true),
            (["call", "tokenet.wallet.v1.Bogus/Foo"], false),
            (["call", "tokenet.wallet.v1.WalletControl/Nope"], false),
        ]
        for (arguments, pointsElsewhere) in cases {
            let result = try await runTokenet(servedBy: router) {
                [arguments[0], $0, arguments[1], "--plaintext", "--deadline", "20s"]
            }
            #expect(result.status != 0, "\(arguments): \(result.stderr)")
            #expect(
                result.stderr.contains("give the address of") == pointsElsewhere, "\(arguments): \(result.stderr)")
        }
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

    /// Over TLS the node's certificate says what it is: a party command given another party's address sends
    /// nothing to it. `wallet add-card` gave the issuer-node the card number and security code, and only its
    /// UNIMPLEMENTED answer said the address was wrong.
    @Test func aNodeOfAnotherRoleIsSentNothing() async throws {
        let received = Mutex(0)
        var router = RPCRouter()
        router.unary(WalletV1.WalletControl.addCard) { (_, _) async throws in
            received.withLock { $0 += 1 }
            return WalletV1.AddCardResponse()
        }
        let pki = DevelopmentPKI.shared
        var address = ""
        let result = try await runTokenet(
            servedOverTLSBy: router, certificate: pki.path("issuer.pem"), key: pki.path("issuer.key")
        ) {
            address = $0
            return [
                "wallet", "add-card", $0, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123", "--cacert",
                pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
                "--deadline", "20s",
            ]
        }
        #expect(result.status == 64 + 12, "\(result.stderr)")
        #expect(
            result.stderrWithoutTrace
                == "ERROR: UNIMPLEMENTED: \(address) presented an issuer-node's certificate "
                + "(tokenet://issuer/issuer-1), not a wallet-node's: give the address of a wallet-node; nothing was "
                + "sent\n")
        #expect(received.withLock { $0 } == 0)
        // No call was sent, so no trace id would find one in a node's log.
        #expect(!result.stderr.contains("(trace "), "\(result.stderr)")
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
