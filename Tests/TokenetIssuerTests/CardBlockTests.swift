import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// A card the issuer's operator blocks (reported stolen) is refused everywhere a token of it could be made or
/// brought to life, and its tokens change with it; opened again, it provisions as before.
@Suite struct CardBlockTests {
    let tsp: FakeLifecycleTSP
    let sink = MemoryLogSink()
    let party: IssuerParty
    let care: IssuerV1.IssuerCardCare.Client
    let decisions: IssuerV1.IssuerDecisions.Client

    init() throws {
        (tsp, party, care) = try Support.cardCare(sink: sink)
        decisions = IssuerV1.IssuerDecisions.Client(Support.connect(Support.router(party), as: .tsp))
    }

    /// Records the issuer's decision for token `id` of the approving card, as a digitization leaves it.
    func token(_ id: String, outcome: DigitizationOutcome = .approved) throws {
        try party.store.record(
            DecisionRecord(
                cardID: Cards.visaApprove.0, last4: "0009", digitalCardID: id, tokenLast4: "4321",
                walletAccountID: "wa-1", inputMethod: 1, deviceID: "d-1", deviceType: "PHONE",
                risk: RiskScores(account: 1, device: 1), recommendation: 1, rule: "approve", outcome: outcome),
            at: Support.now)
    }

    func eligibility() async throws -> IssuerV1.CardEligibilityResponse {
        var request = IssuerV1.CardEligibilityRequest()
        request.encryptedCardData = try Support.encrypted(
            Cards.visaApprove.1, expiry: Cards.visaApprove.2, cvv2: try Support.cvc(of: Cards.visaApprove.1),
            to: try Support.issuerKey())
        request.inputMethod = .manual
        return try await decisions.checkCardEligibility(request)
    }

    @Test func aBlockedCardIsDeclinedAndItsTokensAreSuspendedOrDeleted() async throws {
        try token("DNILIVE1")
        try token("DNIWAITING1")
        tsp.state.withLock { $0.inactive = ["DNIWAITING1"] }
        #expect(try await eligibility().eligible)

        let blocked = try await care.setCardStatus(
            .init(cardID: Cards.visaApprove.0, blocked: true, reasonCode: "STOLEN"))
        #expect(blocked.blocked && blocked.changed && blocked.blockedReason == "STOLEN")
        // The live token suspended; the one waiting for ID&V, which cannot be, deleted.
        #expect(blocked.results.map(\.digitalCardID) == ["DNILIVE1", "DNIWAITING1"])
        #expect(blocked.results.map(\.tokenState) == [.suspended, .deactivated])
        #expect(blocked.results.allSatisfy { $0.statusCode == 0 })
        let sent = tsp.state.withLock { $0.changes.map { ($0.action, $0.digitalCardIds, $0.reasonCode) } }
        #expect(sent.map(\.0) == [.suspend, .delete] && sent.last?.1 == ["DNIWAITING1"], "\(sent)")
        #expect(sent.allSatisfy { $0.2 == "STOLEN" })

        let refused = try await eligibility()
        #expect(!refused.eligible)
        #expect(refused.reason == "the card ending 0009 is blocked by the issuer (STOLEN)")
        let again = try await care.setCardStatus(
            .init(cardID: Cards.visaApprove.0, blocked: true, reasonCode: "STOLEN", tokens: .keep))
        #expect(!again.changed && again.results.isEmpty)

        let opened = try await care.setCardStatus(
            .init(cardID: Cards.visaApprove.0, blocked: false, reasonCode: "FOUND", tokens: .resume))
        #expect(!opened.blocked && opened.changed && opened.blockedReason.isEmpty)
        #expect(opened.results.map(\.digitalCardID) == ["DNILIVE1"])
        #expect(tsp.state.withLock { $0.changes.last?.action } == .resume)
        #expect(try await eligibility().eligible)
    }

    @Test func deleteRemovesEveryTokenAndKeepLeavesThem() async throws {
        try token("DNIONE1")
        let deleted = try await care.setCardStatus(
            .init(cardID: Cards.visaApprove.0, blocked: true, reasonCode: "LOST", tokens: .delete))
        #expect(deleted.results.map(\.tokenState) == [.deactivated])
        _ = try await care.setCardStatus(.init(cardID: Cards.visaApprove.0, blocked: false))
        let kept = try await care.setCardStatus(
            .init(cardID: Cards.visaApprove.0, blocked: true, reasonCode: "LOST", tokens: .keep))
        #expect(kept.changed && kept.results.isEmpty)
        #expect(tsp.state.withLock { $0.changes.count } == 1)
    }

    @Test func badRequestsAreRefused() async throws {
        await #expect(throws: RPCError.self) {
            try await care.setCardStatus(.init(cardID: Cards.visaApprove.0, blocked: true))
        }
        let noReason = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: Cards.visaApprove.0, blocked: true))
        }
        #expect(noReason?.code == .invalidArgument && noReason?.message.contains("reason_code is required") == true)
        let wrongAction = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: Cards.visaApprove.0, blocked: false, tokens: .suspend))
        }
        #expect(wrongAction?.code == .invalidArgument)
        let resumeOnBlock = await Support.rpcError {
            _ = try await care.setCardStatus(
                .init(cardID: Cards.visaApprove.0, blocked: true, reasonCode: "STOLEN", tokens: .resume))
        }
        #expect(resumeOnBlock?.code == .invalidArgument)
        let unknown = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: "card-none", blocked: true, reasonCode: "STOLEN"))
        }
        #expect(unknown?.code == .notFound)
        let badReason = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: Cards.visaApprove.0, blocked: true, reasonCode: "stolen!"))
        }
        #expect(badReason?.code == .invalidArgument)
        #expect(try party.store.card(id: Cards.visaApprove.0)?.blockedReason == nil)
    }

    /// A stand-in approval of a blocked card is deleted when the issuer hears of it.
    @Test func aStandInApprovalOfABlockedCardIsDeleted() async throws {
        _ = try await care.setCardStatus(
            .init(cardID: Cards.visaStandIn.0, blocked: true, reasonCode: "STOLEN", tokens: .keep))
        let app = try IssuerAppNotificationHandler(
            view: IssuerAppView(), logger: Support.logger(sink), store: party.store)
        let notifications = IssuerNodeNotifications(
            app: app, decisions: party.decisions, cardCare: party.cardCare, logger: Support.logger(sink))
        try await notifications.handle(try StandInAdviceRecordingTests.advice("DNISTOLEN1"))
        let deleted = tsp.state.withLock { $0.changes.map { ($0.digitalCardIds, $0.action, $0.reasonCode) } }
        #expect(deleted.count == 1 && deleted.first?.0 == ["DNISTOLEN1"] && deleted.first?.1 == .delete)
        #expect(deleted.first?.2 == "ISSUER_DECLINED")
    }
}
