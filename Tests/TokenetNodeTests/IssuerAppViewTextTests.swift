import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `tokenet issuer app-view` against an in-process issuer app: the UPDATED BY column says in words what last changed
/// each card, since it printed the wallet event's wire name (WALLET_EVENT_KIND_TOKEN_STATUS_CHANGED).
@Suite(.timeLimit(.minutes(3))) struct IssuerAppViewTextTests {
    @Test func theUpdatedByColumnIsWords() async throws {
        var router = RPCRouter()
        router.unary(IssuerV1.IssuerApp.cardView) { (_, _) async throws in
            IssuerV1.CardViewResponse(
                listening: true, walletAccountID: "wallet-account-1", lastSequence: 4,
                cards: [
                    .init(digitalCardID: "DNITHE01", tokenState: .active, updatedBy: "pull"),
                    .init(
                        digitalCardID: "DNITHE02", tokenState: .active,
                        updatedBy: "WALLET_EVENT_KIND_TOKENIZED_CARD_ADDED"),
                    .init(
                        digitalCardID: "DNITHE03", tokenState: .suspended,
                        updatedBy: "WALLET_EVENT_KIND_TOKEN_STATUS_CHANGED"),
                    .init(
                        digitalCardID: "DNITHE04", tokenState: .deactivated,
                        updatedBy: "WALLET_EVENT_KIND_TOKENIZED_CARD_REMOVED", removed: true),
                    .init(digitalCardID: "DNITHE05", tokenState: .suspended, updatedBy: "CARD_STATE"),
                ],
                pulls: 1)
        }
        let pki = DevelopmentPKI.shared
        let result = try await runTokenet(
            servedOverTLSBy: router, certificate: pki.path("issuer.pem"), key: pki.path("issuer.key")
        ) {
            [
                "issuer", "app-view", $0, "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"),
                "--key", pki.path("operator.key"), "--deadline", "20s",
            ]
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(", 1 pull, last event "), "\(result.stdout)")
        let rows = result.stdout.split(separator: "\n").dropFirst(2).map {
            $0.split(separator: "  ", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
        }
        #expect(
            rows == [
                ["DNITHE01", "ACTIVE", "pull of the wallet's tokens"],
                ["DNITHE02", "ACTIVE", "wallet: card added"],
                ["DNITHE03", "SUSPENDED", "wallet: state changed"],
                ["DNITHE04", "REMOVED", "wallet: card removed"],
                ["DNITHE05", "SUSPENDED", "TSP card state message"],
            ], "\(result.stdout)")
        #expect(!result.stdout.contains("WALLET_EVENT_KIND"))
    }
}
