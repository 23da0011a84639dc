import Testing
import TokenetRPC
import TokenetWire

@testable import TokenetWallet

/// PushCardData: the issuer's push becomes a TSP push session for this wallet's account.
@Suite struct WalletPushTests {
    let data = CardV1.EncryptedCardData(jwe: "a.b.c.d.e", publicKeyIdentifier: "kid-1")

    @Test func pushedCardDataBecomesAPushSession() async throws {
        let wallet = try WalletHarness()
        let response = try await wallet.push.pushCardData(.init(encryptedCardData: data))
        #expect(response == WalletV1.PushCardDataResponse(pushSessionID: "ps-1", expiresAtMs: 1_000))
        #expect(
            wallet.tsp.recorded.pushSessionRequests == [
                // The pushing node is named from its certificate, for the TSP to check the card is its issuer's.
                .init(
                    encryptedCardData: data, walletAccountID: WalletConfiguration.defaultAccountID,
                    pushingIssuerNodeID: "issuer-1")
            ])
    }

    @Test func anotherAccountOrNoCardDataIsRefused() async throws {
        let wallet = try WalletHarness()
        #expect(
            await statusCode {
                try await wallet.push.pushCardData(.init(encryptedCardData: data, walletAccountID: "someone-else"))
            } == .notFound)
        #expect(await statusCode { try await wallet.push.pushCardData(.init()) } == .invalidArgument)
        #expect(wallet.tsp.recorded.pushSessionRequests.isEmpty)
    }

    @Test func onlyIssuersMayPush() async throws {
        let wallet = try WalletHarness()
        #expect(
            await statusCode { try await wallet.pushAsOperator.pushCardData(.init(encryptedCardData: data)) }
                == .permissionDenied)
    }
}
