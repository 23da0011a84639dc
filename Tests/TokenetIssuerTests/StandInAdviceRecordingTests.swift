import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// The TSP's stand-in advice (STAND_IN_ADVICE to the issuer node's queue) records the token with its card, so the
/// card's renewals and card-wide changes reach a token made while the issuer could not answer.
@Suite struct StandInAdviceRecordingTests {
    let tsp: FakeLifecycleTSP
    let sink = MemoryLogSink()
    let party: IssuerParty
    let care: IssuerV1.IssuerCardCare.Client
    let app: IssuerAppNotificationHandler
    let notifications: IssuerNodeNotifications

    init() throws {
        (tsp, party, care) = try Support.cardCare(sink: sink)
        app = try IssuerAppNotificationHandler(view: IssuerAppView(), logger: Support.logger(sink), store: party.store)
        notifications = IssuerNodeNotifications(
            app: app, decisions: party.decisions, cardCare: party.cardCare, logger: Support.logger(sink))
    }

    static func advice(
        _ digitalCardID: String, pan: String = Cards.visaStandIn.1, expiry: String = Cards.visaStandIn.2,
        decision: CardV1.ProvisioningDecision = .approved, to key: RSAPrivateKey? = nil, messageID: String = "m-1",
        par: String = "V001A9F027E5629D11E3949A0800A"
    ) throws -> TspV1.Notification {
        var body = TspV1.StandInAdviceBody()
        body.decision = decision
        body.reason = "stand-in approved (the issuer could not be reached)"
        body.encryptedCardData = try Support.encrypted(pan, expiry: expiry, to: key ?? Support.issuerKey())
        body.maskedPAN = String(repeating: "*", count: 12) + pan.suffix(4)
        body.tokenLast4 = "4321"
        body.walletAccountID = "wa-1"
        body.device = CardV1.DeviceInfo(deviceID: "d-1", deviceType: "PHONE", deviceName: "Phone")
        body.decidedAtMs = 1_790_000_000_000
        body.tokenRequestorID = "40010075001"
        body.tokenType = .hce
        body.paymentAccountReference = par
        var message = TspV1.Notification(
            messageID: messageID, sender: "CPS", topic: "D1_NOTIFICATION", messageType: "STAND_IN_ADVICE",
            cardID: digitalCardID)
        message.body = .standInAdvice(body)
        return message
    }

    @Test func anAdvisedTokenIsRenewedWithItsCardAndARedeliveryRecordsNothingMore() async throws {
        try await notifications.handle(try Self.advice("DNISTANDIN1"))
        try await notifications.handle(try Self.advice("DNISTANDIN1", messageID: "m-1"))
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live == ["DNISTANDIN1"])
        let rows = try party.store.database.query(
            "SELECT rule, decision, token_last4, token_requestor_id, token_type, par FROM decisions "
                + "WHERE digital_card_id = 'DNISTANDIN1'"
        ).map {
            [try $0.text(0), try $0.text(1), try $0.text(2), try $0.text(3), String(try $0.int(4)), try $0.text(5)]
        }
        #expect(rows == [["stand-in", "APPROVED", "4321", "40010075001", "2", "V001A9F027E5629D11E3949A0800A"]])
        #expect(sink.lines.contains { $0.contains("recorded with its card") && $0.contains("par=V001A9F027E5629") })
        // The backend's business: the issuer app's inbox does not list it.
        #expect(app.snapshot.notifications.isEmpty)
        #expect(sink.lines.contains { $0.contains("recorded with its card") && $0.contains("card-visa-standin") })
        #expect(!sink.lines.contains { $0.contains(Cards.visaStandIn.1) })

        let renewed = try await care.renewCard(.init(cardID: Cards.visaStandIn.0, pan: "4761000010000090"))
        #expect(renewed.renewedDigitalCardIds == ["DNISTANDIN1"])
        #expect(tsp.state.withLock { $0.renewals.map(\.0.digitalCardIds) } == [["DNISTANDIN1"]])
    }

    /// Advice is recorded whatever else it holds (or it came back for ever): a PAR not in its form (a card number in
    /// its place) is left out, not recorded or logged.
    @Test func aMalformedPARInAdviceIsLeftOut() async throws {
        try await notifications.handle(try Self.advice("DNISTANDIN2", par: "4761000010000082"))
        let par = try party.store.database.queryOne(
            "SELECT par FROM decisions WHERE digital_card_id = 'DNISTANDIN2'"
        ).map { try $0.text(0) }
        #expect(par == "")
        #expect(sink.lines.contains { $0.contains("recorded with its card") && $0.contains("par=none") })
    }

    /// A stand-in token made from the card's number before a renewal (a digitization that raced the renewal, or the
    /// old number typed in while the issuer was away) is the card's token: recorded with it, and moved onto the
    /// card as it is now before it is recorded. A TSP that cannot be asked then leaves nothing recorded, so the
    /// advice, delivered again, tries again.
    @Test func aTokenMadeFromTheCardsPreviousNumberIsMovedOntoTheRenewedCard() async throws {
        let renewed = try await care.renewCard(.init(cardID: Cards.visaStandIn.0, pan: "4761000010000090"))
        #expect(renewed.renewedDigitalCardIds.isEmpty)

        tsp.state.withLock { $0.droppedRenewals = 1 }
        await #expect(throws: RPCError.self) { try await notifications.handle(try Self.advice("DNIOLDNUMBER1")) }
        #expect(try !party.store.hasDecision(digitalCardID: "DNIOLDNUMBER1", rule: "stand-in"))

        try await notifications.handle(try Self.advice("DNIOLDNUMBER1"))
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live == ["DNIOLDNUMBER1"])
        let moved = tsp.state.withLock { $0.renewals.map { ($0.0.digitalCardIds, $0.1.accountNumber) } }
        #expect(moved.count == 1 && moved.first?.0 == ["DNIOLDNUMBER1"], "\(moved)")
        #expect(moved.first?.1 == "4761000010000090")
        #expect(sink.lines.contains { $0.contains("now holds the card as it is") })
    }

    /// The same for a token made from the card's expiry before a renewal that kept the number; a token made from
    /// the card as it is needs no move.
    @Test func aTokenMadeFromTheCardsPreviousExpiryIsMovedAndACurrentOneIsNot() async throws {
        _ = try await notifications.handle(try Self.advice("DNICURRENT1"))
        #expect(tsp.state.withLock { $0.renewals.isEmpty })
        _ = try await care.renewCard(.init(cardID: Cards.visaStandIn.0, expiry: "12/33"))
        let before = tsp.state.withLock { $0.renewals.count }
        try await notifications.handle(try Self.advice("DNIOLDEXPIRY1", messageID: "m-2"))
        let renewals = tsp.state.withLock { $0.renewals.dropFirst(before).map(\.0.digitalCardIds) }
        #expect(renewals == [["DNIOLDEXPIRY1"]])
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live == ["DNICURRENT1", "DNIOLDEXPIRY1"])
    }

    /// The stand-in cannot check an expiry or a code: a token it approved from an expiry the card never had, or a
    /// wrong code, is deleted at the TSP, where it was moved onto the card as if renewed, giving whoever held the
    /// card number alone a token of the real card. The card's own details, and its earlier ones, are kept.
    @Test func aTokenMadeFromDetailsTheCardNeverHadIsDeletedNotMoved() async throws {
        try await notifications.handle(try Self.advice("DNIGUESSED1", expiry: "01/31"))
        let deleted = tsp.state.withLock { $0.changes.map { ($0.digitalCardIds, $0.action, $0.reasonCode) } }
        #expect(deleted.count == 1 && deleted.first?.0 == ["DNIGUESSED1"] && deleted.first?.1 == .delete)
        #expect(deleted.first?.2 == "CARD_DETAILS_MISMATCH")
        #expect(tsp.state.withLock { $0.renewals.isEmpty })
        #expect(!(try party.store.tokens(ofCard: Cards.visaStandIn.0).live.contains("DNIGUESSED1")))
        #expect(sink.lines.contains { $0.contains("the expiry date is not one the card ending 0082 has had") })

        var wrongCode = try Self.advice("DNIWRONGCODE1", messageID: "m-2")
        if case .standInAdvice(var body)? = wrongCode.body {
            body.encryptedCardData = try Support.encrypted(
                Cards.visaStandIn.1, expiry: Cards.visaStandIn.2, cvv2: "000", to: Support.issuerKey())
            wrongCode.body = .standInAdvice(body)
        }
        try await notifications.handle(wrongCode)
        #expect(tsp.state.withLock { $0.changes.last?.digitalCardIds } == ["DNIWRONGCODE1"])

        try await notifications.handle(try Self.advice("DNIRIGHT1", messageID: "m-3"))
        #expect(tsp.state.withLock { $0.changes.count } == 2)
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live.contains("DNIRIGHT1"))
    }

    @Test func aDeclineIsRecordedButIsNoLiveToken() async throws {
        try await notifications.handle(try Self.advice("DNISTANDIN2", decision: .declined))
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live.isEmpty)
        #expect(try party.store.hasDecision(digitalCardID: "DNISTANDIN2", rule: "stand-in"))
    }

    /// The issuer approved, but its answer reached the TSP after the stand-in had declined: the token was never live,
    /// and card-wide changes and renewals leave it out instead of failing on it.
    @Test func aStandInDeclineOutranksTheIssuersOwnLateApproval() async throws {
        try party.store.record(
            DecisionRecord(
                cardID: Cards.visaStandIn.0, last4: "0082", digitalCardID: "DNISTANDIN6", tokenLast4: "4321",
                walletAccountID: "wa-1", inputMethod: 1, deviceID: "d-1", deviceType: "PHONE",
                risk: RiskScores(account: 1, device: 1), recommendation: 1, rule: "approve", outcome: .approved),
            at: Support.now)
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live == ["DNISTANDIN6"])
        try await notifications.handle(try Self.advice("DNISTANDIN6", decision: .declined))
        // Logged as the issuer's answer come too late, not as a stand-in "while the issuer could not".
        #expect(
            sink.lines.contains { $0.contains("a digitization the issuer answered too late") }, "\(sink.lines)")
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live.isEmpty)
        #expect(try party.store.digitalCardIDs(ofCard: Cards.visaStandIn.0).isEmpty)
    }

    /// The TSP's question reaching the issuer after its stand-in had decided (a link held up, then healed) is
    /// answered, but logged as too late: "digitization decided APPROVED" contradicted the stand-in's decline, which
    /// stands.
    @Test func aQuestionAfterTheStandInDecidedIsLoggedAsTooLate() async throws {
        try await notifications.handle(try Self.advice("DNISTANDIN7", decision: .declined))
        var request = IssuerV1.AuthorizeDigitizationRequest()
        request.encryptedCardData = try Support.encrypted(
            Cards.visaStandIn.1, expiry: Cards.visaStandIn.2, to: try Support.issuerKey())
        request.digitalCardID = "DNISTANDIN7"
        request.walletAccountID = "wa-1"
        let decisions = IssuerV1.IssuerDecisions.Client(Support.connect(Support.router(party), as: .tsp))
        _ = try await decisions.authorizeDigitization(request)
        #expect(
            sink.lines.contains {
                $0.contains("digitization decided after the TSP's stand-in had decided it")
                    && $0.contains("DNISTANDIN7")
            }, "\(sink.lines)")
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live.isEmpty)
    }

    /// Advice that cannot be read would read no better delivered again: it is logged and acknowledged (the handler
    /// returns), not thrown back for redelivery. A card the issuer does not know is recorded without one, and its
    /// approved token deleted: it was left live, and paid, as a token of no card.
    @Test func unreadableAdviceIsLoggedAndDroppedAndAnUnknownCardIsRecordedWithoutOne() async throws {
        try await notifications.handle(try Self.advice("DNISTANDIN3", to: try Support.tspKey()))
        #expect(try !party.store.hasDecision(digitalCardID: "DNISTANDIN3", rule: "stand-in"))
        #expect(sink.lines.contains { $0.contains("stand-in advice whose card cannot be read; not recorded") })

        try await notifications.handle(try Self.advice("DNISTANDIN4", decision: .requireAdditionalAuthentication))
        #expect(try !party.store.hasDecision(digitalCardID: "DNISTANDIN4", rule: "stand-in"))

        try await notifications.handle(try Self.advice("DNISTANDIN5", pan: "4761000099999998", expiry: "01/31"))
        #expect(try party.store.hasDecision(digitalCardID: "DNISTANDIN5", rule: "stand-in"))
        #expect(sink.lines.contains { $0.contains("a card the issuer does not know") && $0.contains("last4=9998") })
        let deleted = tsp.state.withLock { $0.changes.map { ($0.digitalCardIds, $0.action, $0.reasonCode) } }
        #expect(deleted.count == 1 && deleted.first?.0 == ["DNISTANDIN5"] && deleted.first?.1 == .delete)
        #expect(deleted.first?.2 == "CARD_DETAILS_MISMATCH")
        #expect(sink.lines.contains { $0.contains("the issuer has no card ending 9998") })
    }

    /// A stand-in approval of a card the issuer declines (its rule declines, or it is not eligible) is deleted at
    /// the TSP as the issuer would have declined it, with reason ISSUER_DECLINED; it stayed live and paid. A card
    /// whose rule steps up keeps the stand-in's approval (the cardholder cannot be stepped up afterwards), and a
    /// stand-in decline of a declined card needs nothing.
    @Test func aStandInApprovalOfACardTheIssuerDeclinesIsDeleted() async throws {
        try await notifications.handle(
            try Self.advice("DNIRULEDECLINES1", pan: Cards.mcDecline.1, expiry: Cards.mcDecline.2, messageID: "m-1"))
        try await notifications.handle(
            try Self.advice(
                "DNINOTELIGIBLE1", pan: Cards.visaNotEligible.1, expiry: Cards.visaNotEligible.2, messageID: "m-2"))
        try await notifications.handle(
            try Self.advice("DNISTEPSUP1", pan: Cards.visaStepUp.1, expiry: Cards.visaStepUp.2, messageID: "m-3"))
        try await notifications.handle(
            try Self.advice(
                "DNIDECLINED1", pan: Cards.mcDecline.1, expiry: Cards.mcDecline.2, decision: .declined,
                messageID: "m-4"))
        let deleted = tsp.state.withLock { $0.changes.map { ($0.digitalCardIds, $0.action, $0.reasonCode) } }
        #expect(deleted.map(\.0) == [["DNIRULEDECLINES1"], ["DNINOTELIGIBLE1"]], "\(deleted)")
        #expect(deleted.allSatisfy { $0.1 == .delete && $0.2 == "ISSUER_DECLINED" })
        #expect(sink.lines.contains { $0.contains("the card's rule declines it") && $0.contains("DNIRULEDECLINES1") })
        #expect(sink.lines.contains { $0.contains("the card is not eligible") && $0.contains("DNINOTELIGIBLE1") })
        #expect(try party.store.tokens(ofCard: Cards.mcDecline.0).live.isEmpty)
        #expect(try party.store.tokens(ofCard: Cards.visaStepUp.0).live == ["DNISTEPSUP1"])
    }

    @Test func otherMessagesGoToTheIssuerApp() async throws {
        var message = TspV1.Notification(
            messageID: "m-9", sender: "CPS", topic: "D1_NOTIFICATION", messageType: "CARD_STATE", cardID: "DNIX")
        message.body = .cardState(.init(tokenState: .suspended, initiator: "WALLET"))
        try await notifications.handle(message)
        #expect(app.snapshot.notifications.map { $0.notification?.messageID } == ["m-9"])
    }
}
