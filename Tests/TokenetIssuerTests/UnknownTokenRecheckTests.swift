import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// A token recorded unknown to the TSP (`unknown_tokens`) is sent again once the TSP shows it knows it: an answer
/// about it, or the operator asking with recheck_unknown.
extension CardCareTests {
    /// Suspends `ids` by id while the TSP does not know them, which records them unknown.
    func recordUnknown(_ ids: [String]) async throws {
        for id in ids { try decide(Cards.visaApprove.0, digitalCardID: id, outcome: .approved) }
        tsp.state.withLock { $0.unknown = Set(ids) }
        _ = try await care.changeTokenStates(.init(digitalCardIds: ids, action: .suspend, reasonCode: "LOST_CARD"))
        #expect(try party.store.tokens(ofCard: Cards.visaApprove.0).unknown == ids)
    }

    /// With recheck_unknown, tokens named by id that are recorded unknown are sent to the TSP: one it now knows is
    /// changed and no longer recorded unknown, one it still does not know stays recorded; a deleted one is still
    /// refused by the issuer. Without it, the same tokens are refused without a TSP call.
    @Test func recheckUnknownAsksTheTSPAboutNamedTokens() async throws {
        try await recordUnknown(["DNIBACK", "DNISTILL"])
        try party.store.recordDeletedTokens(["DNIDELETED"])
        tsp.state.withLock { $0.unknown = ["DNISTILL"] }
        let calls = tsp.state.withLock { $0.changeCalls }
        let named = ["DNIBACK", "DNISTILL", "DNIDELETED"]
        let refused = try await care.changeTokenStates(
            .init(digitalCardIds: named, action: .suspend, reasonCode: "LOST_CARD"))
        #expect(refused.results.map(\.statusCode).allSatisfy { $0 != 0 })
        #expect(tsp.state.withLock { $0.changeCalls } == calls)

        let rechecked = try await care.changeTokenStates(
            .init(digitalCardIds: named, action: .suspend, reasonCode: "LOST_CARD", recheckUnknown: true))
        #expect(rechecked.results.map(\.digitalCardID) == named)
        #expect(
            rechecked.results.map(\.statusCode)
                == [0, StatusCode.notFound.rawValue, StatusCode.failedPrecondition.rawValue])
        #expect(tsp.state.withLock { $0.changes.last?.digitalCardIds } == ["DNIBACK", "DNISTILL"])
        #expect(
            try party.store.goneTokens(named).mapValues(\.isUnknownToTSP) == ["DNISTILL": true, "DNIDELETED": false])
        #expect(sink.lines.contains { $0.contains("known to it after all") && $0.contains("DNIBACK") })
    }

    /// A token the TSP still does not know when asked again with recheck_unknown keeps its one record and its
    /// first time, and is not logged as recorded a second time.
    @Test func aTokenStillUnknownWhenRecheckedIsNotRecordedAgain() async throws {
        try await recordUnknown(["DNISTILL"])
        let first = try party.store.goneTokens(["DNISTILL"])
        let rechecked = try await care.changeTokenStates(
            .init(digitalCardIds: ["DNISTILL"], action: .suspend, reasonCode: "LOST_CARD", recheckUnknown: true))
        #expect(rechecked.results.map(\.statusCode) == [StatusCode.notFound.rawValue])
        #expect(try party.store.goneTokens(["DNISTILL"]) == first)
        #expect(try party.store.recordUnknownTokens(["DNISTILL", "DNINEW"]) == ["DNINEW"])
        let recorded = sink.lines.filter { $0.contains("tokens the TSP does not know recorded") }
        #expect(recorded.count == 1 && recorded.allSatisfy { $0.contains("DNISTILL") }, "\(recorded)")
    }

    /// With --card, recheck_unknown sends the card's tokens recorded unknown too (none counted skipped), and the
    /// next card-wide change, without it, sends the one the TSP answered about.
    @Test func recheckUnknownSendsTheCardsUnknownTokens() async throws {
        try await recordUnknown(["DNIBACK"])
        tsp.state.withLock { $0.unknown = [] }
        let skipping = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaApprove.0))
        #expect(skipping.unknownTokensSkipped == 1 && !skipping.results.map(\.digitalCardID).contains("DNIBACK"))

        let rechecked = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaApprove.0, recheckUnknown: true))
        #expect(rechecked.unknownTokensSkipped == 0 && rechecked.results.map(\.digitalCardID).contains("DNIBACK"))
        #expect(try party.store.tokens(ofCard: Cards.visaApprove.0).unknown.isEmpty)
        let resumed = try await care.changeTokenStates(
            .init(action: .resume, reasonCode: "FOUND", cardID: Cards.visaApprove.0))
        #expect(resumed.unknownTokensSkipped == 0 && resumed.results.map(\.digitalCardID).contains("DNIBACK"))
    }

    /// A renewal the TSP answers renewing a token recorded unknown meanwhile (a token change racing it recorded it)
    /// shows the TSP knows it: the record goes.
    @Test func aRenewalAnsweredForATokenRecordedUnknownForgetsTheRecord() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNIRACE", outcome: .approved)
        let gate = Gate()
        tsp.state.withLock { $0.holdNextRenewal = gate }
        let renewal = Task { [care] in
            try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        try await gate.arrived(1)
        try party.store.recordUnknownTokens(["DNIRACE"])
        gate.open()
        #expect(try await renewal.value.renewedDigitalCardIds == ["DNIRACE"])
        #expect(try party.store.goneTokens(["DNIRACE"]).isEmpty)
    }

    /// GetFundingCards answering what a token recorded unknown meanwhile holds (an abandon asking it) shows the TSP
    /// knows it: the record goes.
    @Test func aFundingAnswerForATokenRecordedUnknownForgetsTheRecord() async throws {
        try await pendingRenewal(applied: false)
        let gate = Gate()
        tsp.state.withLock { $0.holdNextFunding = gate }
        let abandon = Task { [care] in try await care.renewCard(.init(cardID: Cards.visaApprove.0, abandon: true)) }
        try await gate.arrived(1)
        try party.store.recordUnknownTokens(["DNITHE1"])
        gate.open()
        #expect(try await abandon.value.abandoned)
        #expect(try party.store.goneTokens(["DNITHE1"]).isEmpty)
    }
}

/// The TSP naming a token in a message to the issuer app, or in a question to the issuer, shows it knows it.
@Suite struct UnknownTokenNoticeTests {
    /// Any message the app processes (its senders, its topic) names a token the TSP knows; one handed back to the app
    /// (another sender) or naming none shows nothing.
    @Test func aProcessedMessageNamingATokenShowsTheTSPKnowsIt() {
        let state = IssuerAppInboxTests.message("CARD_STATE", body: .cardState(.init(tokenState: .active)))
        #expect(IssuerAppInbox.knownToken(state) == "DNITHE1")
        let renewal = IssuerRetentionTests.renewal("DNIRENEWED", to: "c-1", messageID: "r-1")
        #expect(IssuerAppInbox.knownToken(renewal) == "DNIRENEWED")
        #expect(IssuerAppInbox.knownToken(IssuerAppInboxTests.message("CARD_STATE", body: nil, sender: "X")) == nil)
        #expect(IssuerAppInbox.knownToken(IssuerAppInboxTests.message("AUTHN", body: nil, cardID: "")) == nil)
    }

    /// The app keeping a CARD_STATE about a token recorded unknown forgets the record, in the same transaction; a
    /// message from another sender naming one leaves it.
    @Test func theAppForgetsATokenTheTSPSendsAMessageAbout() async throws {
        let store = try Support.store()
        try store.recordUnknownTokens(["DNITHE1", "DNIOTHER"])
        let handler = try IssuerAppRetentionStoreTests.handler(store, ManualClock())
        let state = IssuerAppInboxTests.message("CARD_STATE", body: .cardState(.init(tokenState: .active)))
        try await handler.handle(state)
        var foreign = IssuerAppInboxTests.message("CARD_STATE", body: nil, sender: "X", cardID: "DNIOTHER")
        foreign.messageID = "m-foreign"
        try await handler.handle(foreign)
        #expect(try store.goneTokens(["DNITHE1", "DNIOTHER"]).keys.sorted() == ["DNIOTHER"])
    }
}

extension IssuerDecisionsTests {
    /// The TSP asking for a decision on a token (resuming a digitization it did not finish) shows it knows it.
    @Test func aDigitizationQuestionForgetsATokenRecordedUnknown() async throws {
        try party.store.recordUnknownTokens(["DNITHE000000000001", "DNIOTHER"])
        _ = try await authorize(Cards.visaApprove)
        #expect(try party.store.goneTokens(["DNITHE000000000001", "DNIOTHER"]).keys.sorted() == ["DNIOTHER"])
    }
}

extension IssuerOtpTests {
    /// The TSP asking for a code to be sent, and answering a call-centre activation, each about a token it holds,
    /// show it knows the token.
    @Test func aCodeOrAnActivationForgetsATokenRecordedUnknown() async throws {
        _ = try await decisionTask.value
        try party.store.recordUnknownTokens([Self.token])
        _ = try await send(.otpSms)
        #expect(try party.store.goneTokens([Self.token]).isEmpty)

        try party.store.recordUnknownTokens([Self.token])
        _ = try await callCentre.activateToken(IssuerV1.CallCentreActivateRequest(digitalCardID: Self.token))
        #expect(try party.store.goneTokens([Self.token]).isEmpty)
    }
}
