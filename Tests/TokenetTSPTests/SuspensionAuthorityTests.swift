import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// Each party's suspension stands until that party lifts it (the TSP's operator lifts them all), and several may
/// stand at once, as in MDES: the wallet cannot undo an issuer's or the TSP's suspension (fraud suspected, a card
/// reported lost), nor the issuer one the cardholder placed on a lost phone.
@Suite struct SuspensionAuthorityTests {
    typealias Authority = SuspensionAuthority

    static func held(_ party: Authority, _ reason: String) -> Authority.Held {
        Authority.Held(party: party, actor: party.party, reason: reason)
    }

    @Test func actorsAreRankedByTheirParty() {
        #expect(Authority(actor: "wallet") == .wallet)
        #expect(Authority(actor: "wallet:wallet-1") == .wallet)
        #expect(Authority(actor: "issuer") == .issuer)
        #expect(Authority(actor: "issuer:bank-a") == .issuer)
        #expect(Authority(actor: "issuer-app:bank-a/ch-alice") == .issuer)
        #expect(Authority(actor: "tsp") == .tsp)
        #expect(Authority(actor: "someone-new") == .tsp)
        for party in [Authority.wallet, .issuer, .tsp] { #expect(Authority(party: party.party) == party) }
        #expect(Authority(party: "someone-new") == nil)
    }

    @Test func aResumeWithoutASuspensionOfItsOwnIsRefusedWithWhoMayResume() {
        func decide(_ party: Authority, _ held: [Authority.Held]) -> Authority.Decision {
            Authority.decide(resuming: true, by: party, held: held, token: "DN1")
        }
        #expect(
            decide(.wallet, [Self.held(.issuer, "FRAUD_SUSPECTED")])
                == .refuse(
                    "token \"DN1\" was suspended by the issuer (FRAUD_SUSPECTED); only the issuer or the TSP may resume "
                        + "it"))
        #expect(
            decide(.issuer, [Self.held(.tsp, "FRAUD_SUSPECTED")])
                == .refuse("token \"DN1\" was suspended by the TSP (FRAUD_SUSPECTED); only the TSP may resume it"))
        // The issuer no longer lifts the cardholder's own suspension (a phone reported lost).
        #expect(
            decide(.issuer, [Self.held(.wallet, "DEVICE_LOST")])
                == .refuse(
                    "token \"DN1\" was suspended by the wallet (DEVICE_LOST); only the wallet or the TSP may resume it")
        )
        #expect(
            decide(.wallet, [Self.held(.issuer, "LOST_CARD"), Self.held(.tsp, "FRAUD_SUSPECTED")])
                == .refuse(
                    "token \"DN1\" was suspended by the issuer (LOST_CARD) and the TSP (FRAUD_SUSPECTED); only the "
                        + "issuer or the TSP may resume it"))
    }

    /// A party lifts its own suspension; the token is ACTIVE again only once none is left, or when the TSP's
    /// operator resumes it.
    @Test func aResumeLiftsOnlyItsOwnSuspension() {
        func decide(_ party: Authority, _ held: [Authority.Held]) -> Authority.Decision {
            Authority.decide(resuming: true, by: party, held: held, token: "DN1")
        }
        let both = [Self.held(.wallet, "DEVICE_LOST"), Self.held(.issuer, "LOST_CARD")]
        #expect(decide(.issuer, both) == .lift(remaining: [Self.held(.wallet, "DEVICE_LOST")]))
        #expect(decide(.wallet, both) == .lift(remaining: [Self.held(.issuer, "LOST_CARD")]))
        #expect(decide(.tsp, both) == .proceed)
        for party in [Authority.wallet, .issuer, .tsp] {
            #expect(decide(party, [Self.held(party, "X")]) == .proceed)
            #expect(decide(.tsp, [Self.held(party, "X")]) == .proceed)
            // A token suspended before suspensions were kept per party, with none recorded.
            #expect(decide(party, []) == .proceed)
        }
    }

    @Test func aSuspendBesideAnotherPartysIsAdded() {
        func decide(_ party: Authority, _ held: [Authority.Held]) -> Authority.Decision {
            Authority.decide(resuming: false, by: party, held: held, token: "DN1")
        }
        #expect(decide(.issuer, [Self.held(.wallet, "DEVICE_LOST")]) == .add)
        #expect(decide(.wallet, [Self.held(.issuer, "FRAUD_SUSPECTED")]) == .add)
        #expect(decide(.tsp, [Self.held(.wallet, "A"), Self.held(.issuer, "B")]) == .add)
    }

    /// A suspend by a party that holds a suspension already is refused naming its reason: the state machine's bare
    /// "cannot suspend a token that is SUSPENDED" read the same for an operator's own earlier suspension (a retry
    /// after a lost answer) and for another party's.
    @Test func aSecondSuspendByTheSamePartyIsRefusedWithItsReason() {
        func decide(_ party: Authority, _ held: [Authority.Held]) -> Authority.Decision {
            Authority.decide(resuming: false, by: party, held: held, token: "DN1")
        }
        #expect(
            decide(.wallet, [Self.held(.wallet, "LOST_CARD")])
                == .refuse("token \"DN1\" is already SUSPENDED (by the wallet, LOST_CARD)"))
        #expect(
            decide(.issuer, [Self.held(.issuer, "LOST_CARD"), Self.held(.tsp, "FRAUD")])
                == .refuse("token \"DN1\" is already SUSPENDED (by the issuer, LOST_CARD)"))
        #expect(
            decide(.tsp, [Self.held(.tsp, "LOST_CARD")])
                == .refuse("token \"DN1\" is already SUSPENDED (by the TSP, LOST_CARD)"))
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
        #expect(held.results.first?.message == "token \"\(id)\" is already SUSPENDED (by the issuer, LOST_CARD)")
        // The issuer's suspension, and the TSP's beside it; the refusals publish nothing.
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

    /// The cardholder's lost phone (the wallet's DEVICE_LOST) and the issuer's lost card stand side by side: the
    /// issuer's resume after replacing the card lifts its own and leaves the token SUSPENDED, where it re-enabled
    /// the lost phone. Each change is told with the suspensions that stand, under a new state version.
    @Test func suspensionsStandSideBySideAndEachPartyLiftsItsOwn() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        let issuer = LifecycleTests.lifecycle(tsp, as: LifecycleTests.issuer1)
        let tspOperator = LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1)

        _ = try await wallet.changeTokenState(LifecycleTests.change(id, .suspend, "DEVICE_LOST"))
        let added = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(added.results.map(\.statusCode) == [0])
        #expect(added.results.map(\.tokenState) == [.suspended])
        let lifted = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .resume, reasonCode: "CARD_REPLACED"))
        #expect(lifted.results.map(\.statusCode) == [0])
        #expect(lifted.results.map(\.tokenState) == [.suspended])
        #expect(try await tsp.control.listTokens(.init()).tokens.first?.state == .suspended)
        let history = try await tsp.control.tokenHistory(.init(digitalCardID: id))
        let lastTwo = history.events.suffix(2).map { ($0.fromState, $0.toState, $0.actor, $0.reason) }
        #expect(lastTwo.map(\.0) == [.suspended, .suspended] && lastTwo.map(\.1) == [.suspended, .suspended])
        #expect(lastTwo.map(\.2) == ["issuer:bank-a", "issuer:bank-a"])
        #expect(
            lastTwo.map(\.3) == ["LOST_CARD", "CARD_REPLACED; lifts the issuer's suspension, the wallet's stands"])

        let published = tsp.published.of("CARD_STATE").compactMap { announcement -> TspV1.CardStateBody? in
            guard case .cardState(let body)? = announcement.notification.body else { return nil }
            return body
        }
        #expect(published.count == 3)
        #expect(
            published.map { $0.suspensions.map(\.party) } == [["wallet"], ["wallet", "issuer"], ["wallet"]],
            "\(published)")
        #expect(published.map(\.initiator) == ["wallet", "issuer", "issuer"])
        #expect(zip(published, published.dropFirst()).allSatisfy { $1.stateVersion == $0.stateVersion + 1 })
        #expect(published[1].heldSuspensionsShown == "; held by wallet (DEVICE_LOST), issuer (LOST_CARD)")
        #expect(published[2].heldSuspensionsShown == "; issuer's suspension lifted, still held by wallet (DEVICE_LOST)")

        // The issuer holds none now: its resume is refused, naming the wallet's.
        let refused = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .resume, reasonCode: "CARD_REPLACED"))
        #expect(refused.results.map(\.statusCode) == [StatusCode.failedPrecondition.rawValue])
        #expect(
            refused.results.first?.message
                == "token \"\(id)\" was suspended by the wallet (DEVICE_LOST); only the wallet or the TSP may resume it"
        )
        #expect(
            try await wallet.changeTokenState(LifecycleTests.change(id, .resume, "DEVICE_FOUND")).tokenState == .active)

        // The wallet may place its own beside the issuer's, and lifts only its own; the TSP's operator lifts all.
        _ = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .suspend, reasonCode: "FRAUD_SUSPECTED"))
        #expect(
            try await wallet.changeTokenState(LifecycleTests.change(id, .suspend, "DEVICE_LOST")).tokenState
                == .suspended)
        #expect(
            try await wallet.changeTokenState(LifecycleTests.change(id, .resume, "DEVICE_FOUND")).tokenState
                == .suspended)
        await expectRPCError(.failedPrecondition, "only the issuer or the TSP may resume it") {
            try await wallet.changeTokenState(LifecycleTests.change(id, .resume, "DEVICE_FOUND"))
        }
        _ = try await tspOperator.changeTokenState(LifecycleTests.change(id, .suspend, "FRAUD_SUSPECTED"))
        #expect(
            try await tspOperator.changeTokenState(LifecycleTests.change(id, .resume, "REVIEWED")).tokenState
                == .active)
        #expect(
            try await wallet.changeTokenState(LifecycleTests.change(id, .suspend, "DEVICE_LOST")).tokenState
                == .suspended)
        #expect(try await wallet.changeTokenState(LifecycleTests.change(id, .resume, "FOUND")).tokenState == .active)
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
