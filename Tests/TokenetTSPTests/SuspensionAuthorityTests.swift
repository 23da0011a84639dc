import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// A suspension stands until its suspender, or a party above it, lifts it (wallet < issuer < TSP): the wallet
/// cannot undo an issuer's or the TSP's suspension (fraud suspected, a card reported lost), and a higher party
/// suspending a suspended token takes the suspension over.
@Suite struct SuspensionAuthorityTests {
    typealias Authority = SuspensionAuthority

    @Test func actorsAreRankedByTheirParty() {
        #expect(Authority(actor: "wallet") == .wallet)
        #expect(Authority(actor: "wallet:wallet-1") == .wallet)
        #expect(Authority(actor: "issuer") == .issuer)
        #expect(Authority(actor: "issuer:bank-a") == .issuer)
        #expect(Authority(actor: "issuer-app:bank-a/ch-alice") == .issuer)
        #expect(Authority(actor: "tsp") == .tsp)
        #expect(Authority(actor: "someone-new") == .tsp)
    }

    @Test func aResumeBelowTheSuspenderIsRefusedWithWhoMayResume() {
        func decide(_ party: Authority, _ holder: Authority) -> Authority.Decision {
            Authority.decide(resuming: true, by: party, heldBy: holder, reason: "FRAUD_SUSPECTED", token: "DN1")
        }
        #expect(
            decide(.wallet, .issuer)
                == .refuse(
                    "token \"DN1\" was suspended by the issuer (FRAUD_SUSPECTED); only the issuer or the TSP may resume "
                        + "it"))
        #expect(
            decide(.issuer, .tsp)
                == .refuse("token \"DN1\" was suspended by the TSP (FRAUD_SUSPECTED); only the TSP may resume it"))
        #expect(decide(.wallet, .tsp) != .proceed)
        for (party, holder) in [(Authority.wallet, Authority.wallet), (.issuer, .wallet), (.issuer, .issuer)] {
            #expect(decide(party, holder) == .proceed)
        }
        for holder in [Authority.wallet, .issuer, .tsp] { #expect(decide(.tsp, holder) == .proceed) }
    }

    @Test func aSuspendAboveTheSuspenderTakesTheSuspensionOver() {
        func decide(_ party: Authority, _ holder: Authority) -> Authority.Decision {
            Authority.decide(resuming: false, by: party, heldBy: holder, reason: "USER_REQUEST", token: "DN1")
        }
        #expect(decide(.issuer, .wallet) == .takeOver)
        #expect(decide(.tsp, .issuer) == .takeOver)
    }

    /// A suspend of a token already suspended by the same party or one above it is refused naming the holder and
    /// its reason: the state machine's bare "cannot suspend a token that is SUSPENDED" read the same for an
    /// operator's own earlier suspension (a retry after a lost answer) and for another party's.
    @Test func aSuspendNotAboveTheSuspenderIsRefusedWithWhoHoldsIt() {
        func decide(_ party: Authority, _ holder: Authority) -> Authority.Decision {
            Authority.decide(resuming: false, by: party, heldBy: holder, reason: "LOST_CARD", token: "DN1")
        }
        #expect(decide(.wallet, .wallet) == .refuse("token \"DN1\" is already SUSPENDED (by the wallet, LOST_CARD)"))
        #expect(decide(.wallet, .issuer) == .refuse("token \"DN1\" is already SUSPENDED (by the issuer, LOST_CARD)"))
        #expect(decide(.issuer, .issuer) == .refuse("token \"DN1\" is already SUSPENDED (by the issuer, LOST_CARD)"))
        #expect(decide(.issuer, .tsp) == .refuse("token \"DN1\" is already SUSPENDED (by the TSP, LOST_CARD)"))
        #expect(decide(.tsp, .tsp) == .refuse("token \"DN1\" is already SUSPENDED (by the TSP, LOST_CARD)"))
    }

    /// Through the TSP's services: the issuer's repeated suspend and the TSP operator's, each answered with the
    /// suspension's holder and reason, and the token stays as it was.
    @Test func aRepeatedSuspendNamesWhoSuspendedTheTokenAndWhy() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let issuer = LifecycleTests.lifecycle(tsp, as: LifecycleTests.issuer1)
        let tspOperator = LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1)

        _ = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .suspend, reasonCode: "LOST_CARD"))
        let again = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(again.results.map(\.statusCode) == [StatusCode.failedPrecondition.rawValue])
        #expect(again.results.map(\.tokenState) == [.suspended])
        #expect(again.results.first?.message == "token \"\(id)\" is already SUSPENDED (by the issuer, LOST_CARD)")

        _ = try await tspOperator.changeTokenState(LifecycleTests.change(id, .suspend, "FRAUD_SUSPECTED"))
        await expectRPCError(
            .failedPrecondition, "token \"\(id)\" is already SUSPENDED (by the TSP, FRAUD_SUSPECTED)"
        ) {
            try await tspOperator.changeTokenState(LifecycleTests.change(id, .suspend, "FRAUD_SUSPECTED"))
        }
        let held = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(held.results.first?.message == "token \"\(id)\" is already SUSPENDED (by the TSP, FRAUD_SUSPECTED)")
        // The issuer's suspension, and the TSP's taking it over; the refusals publish nothing.
        #expect(tsp.published.of("CARD_STATE").count == 2)
    }

    @Test func theWalletCannotLiftTheIssuersSuspensionButTheIssuerCan() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        let issuer = LifecycleTests.lifecycle(tsp, as: LifecycleTests.issuer1)

        let suspended = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .suspend, reasonCode: "FRAUD_SUSPECTED"))
        #expect(suspended.results.map(\.statusCode) == [0])
        await expectRPCError(
            .failedPrecondition,
            "was suspended by the issuer (FRAUD_SUSPECTED); only the issuer or the TSP may resume it"
        ) {
            try await wallet.changeTokenState(LifecycleTests.change(id, .resume))
        }
        #expect(try await tsp.control.listTokens(.init()).tokens.first?.state == .suspended)

        let resumed = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .resume, reasonCode: "CARD_FOUND"))
        #expect(resumed.results.map(\.tokenState) == [.active])
        // Once the issuer has lifted it, the wallet's own suspensions are the wallet's to lift again.
        _ = try await wallet.changeTokenState(LifecycleTests.change(id, .suspend))
        #expect(try await wallet.changeTokenState(LifecycleTests.change(id, .resume)).tokenState == .active)
    }

    @Test func theIssuerTakesOverTheWalletsSuspensionAndOnlyTheTSPLiftsItsOwn() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        let issuer = LifecycleTests.lifecycle(tsp, as: LifecycleTests.issuer1)
        let tspOperator = LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1)

        _ = try await wallet.changeTokenState(LifecycleTests.change(id, .suspend))
        let takenOver = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(takenOver.results.map(\.statusCode) == [0])
        #expect(takenOver.results.map(\.tokenState) == [.suspended])
        await expectRPCError(.failedPrecondition, "was suspended by the issuer (LOST_CARD)") {
            try await wallet.changeTokenState(LifecycleTests.change(id, .resume))
        }
        let history = try await tsp.control.tokenHistory(.init(digitalCardID: id))
        let last = try #require(history.events.last)
        #expect(last.fromState == .suspended && last.toState == .suspended)
        #expect(last.actor == "issuer:bank-a" && last.reason == "LOST_CARD")
        // Taking over keeps the state but tells the wallet and the issuer app who holds the suspension now, with a
        // new state version: told nothing, the wallet went on offering a resume the TSP refuses.
        let published = tsp.published.of("CARD_STATE")
        #expect(published.count == 2)
        guard case .cardState(let before)? = published.first?.notification.body,
            case .cardState(let after)? = published.last?.notification.body
        else {
            Issue.record("no CARD_STATE bodies: \(published)")
            return
        }
        #expect(after.tokenState == .suspended && after.initiator == "issuer" && after.reasonCode == "LOST_CARD")
        #expect(after.stateVersion == before.stateVersion + 1)
        #expect(published.last?.queues == published.first?.queues)

        _ = try await tspOperator.changeTokenState(LifecycleTests.change(id, .suspend, "FRAUD_SUSPECTED"))
        let refused = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .resume, reasonCode: "CARD_FOUND"))
        #expect(refused.results.map(\.statusCode) == [StatusCode.failedPrecondition.rawValue])
        #expect(refused.results.first?.message.contains("only the TSP may resume it") == true)
        #expect(
            try await tspOperator.changeTokenState(LifecycleTests.change(id, .resume, "CARD_FOUND")).tokenState
                == .active)
    }

    /// A renewal keeps a suspended token's state and records the issuer's event SUSPENDED → SUSPENDED, which was
    /// then read as the issuer's suspension: the issuer could lift the TSP's fraud suspension, and the wallet no
    /// longer its own.
    @Test func aRenewalTakesNoSuspensionOver() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        let issuer = LifecycleTests.lifecycle(tsp, as: LifecycleTests.issuer1)
        let tspOperator = LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1)
        let updates = NotificationFlowTests.updates(tsp, as: LifecycleTests.issuer1)
        func renew(_ last4: String, _ year: String) async throws {
            let renewed = TSPHarness.card("411111111111\(last4)", month: "08", year: year)
            let response = try await updates.renewCard(
                .init(digitalCardIds: [id], cardData: try TSPHarness.encrypted(renewed)))
            #expect(response.renewedDigitalCardIds == [id])
        }

        _ = try await tspOperator.changeTokenState(LifecycleTests.change(id, .suspend, "FRAUD_SUSPECTED"))
        try await renew("1129", "2031")
        let refused = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .resume, reasonCode: "REVIEWED"))
        #expect(refused.results.map(\.statusCode) == [StatusCode.failedPrecondition.rawValue])
        #expect(refused.results.first?.message.contains("only the TSP may resume it") == true)
        _ = try await tspOperator.changeTokenState(LifecycleTests.change(id, .resume, "REVIEWED"))

        _ = try await wallet.changeTokenState(LifecycleTests.change(id, .suspend))
        try await renew("1137", "2032")
        #expect(try await wallet.changeTokenState(LifecycleTests.change(id, .resume)).tokenState == .active)
    }
}
