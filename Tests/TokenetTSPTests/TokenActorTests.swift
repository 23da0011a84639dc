import Foundation
import Testing
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// The token history names every party but the TSP as PARTY:ID: the issuer by the token's issuer id in each of its
/// rows (its digitization decision, its changes of state, a renewal), as a call-centre activation always was, and a
/// wallet by its node in a suspend as in its ID&V. A bare `issuer` beside `issuer:bank-a` read as two parties.
@Suite struct TokenActorTests {
    @Test func everyIssuerAndWalletRowNamesItsParty() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        let issuer = LifecycleTests.lifecycle(tsp, as: LifecycleTests.issuer1)
        let tspOperator = LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1)

        _ = try await wallet.changeTokenState(LifecycleTests.change(id, .suspend))
        let suspended = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(suspended.results.map(\.statusCode) == [0])
        let renewed = try await NotificationFlowTests.updates(tsp, as: LifecycleTests.issuer1).renewCard(
            .init(
                digitalCardIds: [id],
                cardData: try TSPHarness.encrypted(TSPHarness.card("4111111111111129", month: "08", year: "2031"))))
        #expect(renewed.renewedDigitalCardIds == [id])
        _ = try await tspOperator.changeTokenState(LifecycleTests.change(id, .suspend, "FRAUD_SUSPECTED"))

        let history = try await tsp.control.tokenHistory(.init(digitalCardID: id))
        #expect(
            history.events.map(\.actor)
                == ["tsp", "issuer:bank-a", "wallet:wallet-1", "issuer:bank-a", "issuer:bank-a", "tsp"])
    }

    /// A digitization declined because its token was deleted first names the party that deleted it, not its id.
    @Test func aDeletionBeforeTheDecisionNamesTheParty() {
        #expect(
            DigitizationOutcome.deletedBeforeDecision(by: "issuer:bank-a", reason: "LOST_CARD").declineReason
                .hasPrefix("the token was deleted by the issuer (LOST_CARD) before"))
        #expect(
            DigitizationOutcome.deletedBeforeDecision(by: "wallet:wallet-1", reason: "USER_REQUEST").declineReason
                .hasPrefix("the token was deleted by the wallet (USER_REQUEST) before"))
    }

    @Test func actorsNameTheirParty() {
        #expect(TokenActor.wallet(node: "wallet-1") == "wallet:wallet-1")
        #expect(TokenActor.issuer("tokenet-bank") == "issuer:tokenet-bank")
        #expect(TokenActor.issuerApp("tokenet-bank", user: "ch-chloe") == "issuer-app:tokenet-bank/ch-chloe")
        for actor in [TokenActor.wallet(node: "w"), TokenActor.issuer("b"), TokenActor.issuerApp("b", user: "u")] {
            #expect(SuspensionAuthority(actor: actor) != .tsp, "\(actor)")
        }
    }
}
