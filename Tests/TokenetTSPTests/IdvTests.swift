import Foundation
import Testing
import TokenetRPC
import TokenetStorage
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// ID&V over the TSP's services in memory: the wallet selects a method and submits codes the fake issuer
/// delivered; the issuer's call centre activates tokens.
@Suite struct IdvTests {
    /// A token the issuer left INACTIVE, offering SMS, e-mail and call-centre methods.
    /// A TSP that sends a card at most `limit` codes a day (`otp_codes_per_card_per_day`).
    static func harness(codesPerCardPerDay limit: Int) throws -> TSPHarness {
        var configuration = TSPHarness.configuration
        configuration.otpCodesPerCardPerDay = limit
        return try TSPHarness.make(configuration: configuration)
    }

    static func steppedUp(_ tsp: TSPHarness) async throws -> String {
        tsp.issuer.set(.stepUpAll)
        let response = try await tsp.digitize(try await tsp.eligibleVisa())
        try #require(response.tokenState == .inactive)
        return response.digitalCardID
    }

    func select(_ tsp: TSPHarness, _ card: String, _ method: String = "otp-sms") async throws
        -> TspV1.SelectIdvMethodResponse
    {
        try await tsp.idv.selectIdvMethod(TspV1.SelectIdvMethodRequest(digitalCardID: card, methodID: method))
    }

    func submit(_ tsp: TSPHarness, _ card: String, _ code: String) async throws -> TspV1.SubmitOtpResponse {
        try await tsp.idv.submitOTP(TspV1.SubmitOtpRequest(digitalCardID: card, code: code))
    }

    static func wrong(_ code: String?) -> String { code == "000000" ? "111111" : "000000" }

    @Test func wrongThenRightCodeActivates() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        let selected = try await select(tsp, card)
        #expect(selected.codeSent)
        #expect(selected.triesLeft == 3)
        #expect(selected.codeExpiresAtMs == tsp.clock.now.unixMilliseconds + 600_000)
        #expect(selected.method?.maskedValue == "***-***-1234")
        let code = try #require(tsp.otp.lastCode)
        #expect(tsp.otp.sent.last?.type == .otpSms)
        #expect(tsp.otp.sent.last?.digitalCardID == card)

        let wrong = try await submit(tsp, card, Self.wrong(code))
        #expect(wrong.result == .incorrectCode && wrong.triesLeft == 2 && wrong.tokenState == .inactive)
        let right = try await submit(tsp, card, code)
        #expect(right.result == .success && right.tokenState == .active)

        let history = try await tsp.control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: card))
        #expect(history.token?.state == .active)
        #expect(history.events.last?.actor == "wallet:wallet-1")
        #expect(history.events.last?.reason == "ID&V one-time code verified (method otp-sms)")
        #expect(!tsp.logs.lines.contains { mentionsAsNumber($0, code) })
        await expectRPCError(.failedPrecondition, "ACTIVE") { try await submit(tsp, card, code) }
    }

    /// The wallet is told where the issuer says the code went (`SendOtpResponse.masked_destination`), in the method
    /// and the instructions of a select and a resend; the method's own destination when the issuer says nothing.
    @Test func theCodesDestinationIsTheOneTheIssuerNames() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        tsp.otp.state.withLock { $0.destination = "+1 ***-***-9876" }
        let selected = try await select(tsp, card)
        #expect(selected.method?.maskedValue == "+1 ***-***-9876")
        #expect(selected.method?.id == "otp-sms")
        #expect(selected.instructions == "enter the code sent to +1 ***-***-9876")
        tsp.otp.state.withLock { $0.destination = "" }
        let resent = try await tsp.idv.resendOTP(.init(digitalCardID: card))
        #expect(resent.method?.maskedValue == "***-***-1234")
    }

    /// Another wallet node is refused every ID&V call on a token it did not digitize, before anything is sent or
    /// counted: no code reaches the cardholder, no try is spent, and the right code does not activate the token.
    @Test func anotherWalletCannotStepUpAToken() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        let selected = try await select(tsp, card)
        let code = try #require(tsp.otp.lastCode)
        let sent = tsp.otp.sent.count
        let other = TspV1.Idv.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.wallet2))
        let refusal = "was not digitized through this wallet"
        await expectRPCError(.permissionDenied, refusal) {
            try await other.selectIdvMethod(.init(digitalCardID: card, methodID: "otp-sms"))
        }
        await expectRPCError(.permissionDenied, refusal) { try await other.resendOTP(.init(digitalCardID: card)) }
        await expectRPCError(.permissionDenied, refusal) {
            try await other.submitOTP(.init(digitalCardID: card, code: Self.wrong(code)))
        }
        await expectRPCError(.permissionDenied, refusal) {
            try await other.submitOTP(.init(digitalCardID: card, code: code))
        }
        #expect(tsp.otp.sent.count == sent)
        let history = try await tsp.control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: card))
        #expect(history.token?.state == .inactive)
        // The wallet that digitized it still has every try.
        let wrong = try await submit(tsp, card, Self.wrong(code))
        #expect(wrong.triesLeft == selected.triesLeft - 1)
        #expect(try await submit(tsp, card, code).result == .success)
    }

    /// A card gets at most `otpCodesPerCardPerDay` codes in 24 hours across its tokens: adding it again brings a
    /// new token with codes of its own, and 12 SMS reached one cardholder in two seconds that way. The cap counts
    /// the card, not the token; another card is not held back, and a day later the card gets codes again.
    @Test func aCardGetsABoundedNumberOfCodesADayHoweverOftenItIsAdded() async throws {
        let tsp = try Self.harness(codesPerCardPerDay: 4)
        let first = try await Self.steppedUp(tsp)
        _ = try await select(tsp, first)
        for _ in 0..<3 { _ = try await tsp.idv.resendOTP(.init(digitalCardID: first)) }
        #expect(tsp.otp.sent.count == 4)
        // The token's code still out, the answer offers no resend or other method the limit would refuse.
        let told = try await select(tsp, first, "otp-email").instructions
        #expect(
            told.contains(
                "enter it (the card has had the most codes the TSP sends it in 24 hours: no other can be sent "
                    + "before "),
            "\(told)")
        #expect(!told.contains("ask for a resend") && !told.contains("can be picked once"), "\(told)")

        let again = try await tsp.digitize(try await tsp.eligibleVisa())
        try #require(again.tokenState == .inactive)
        await expectRPCError(.resourceExhausted, "4 one-time codes were sent for the card ending 1111 in the last 24") {
            try await select(tsp, again.digitalCardID)
        }
        #expect(tsp.otp.sent.count == 4)
        // Refused before anything was stored: the token has no code out, and none of its resends is spent.
        await expectRPCError(.failedPrecondition, "no code was sent for this token") {
            try await tsp.idv.submitOTP(.init(digitalCardID: again.digitalCardID, code: "000000"))
        }

        let otherCard = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        try #require(otherCard.tokenState == .inactive)
        #expect(try await select(tsp, otherCard.digitalCardID).codeSent)

        tsp.clock.advance(seconds: 86_401)
        let dayLater = try await tsp.digitize(try await tsp.eligibleVisa())
        #expect(try await select(tsp, dayLater.digitalCardID).codeSent)
    }

    /// The right code publishes CARD_STATE ACTIVE to the wallet and the issuer app, once: a wallet whose answer
    /// was lost (it crashed, or the connection was cut) learns of the activation from the broker, since submitting
    /// the code again is refused once the token is ACTIVE. Wrong codes publish nothing.
    @Test func theRightCodeNotifiesTheWalletAndTheIssuerApp() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card)
        let code = try #require(tsp.otp.lastCode)
        let before = tsp.published.of("CARD_STATE").count
        _ = try await submit(tsp, card, Self.wrong(code))
        #expect(tsp.published.of("CARD_STATE").count == before)

        _ = try await submit(tsp, card, code)
        let published = tsp.published.of("CARD_STATE").dropFirst(before)
        #expect(published.count == 1)
        let message = try #require(published.first)
        #expect(message.notification.cardID == card)
        #expect(message.queues.contains("wallet/wallet-1") && message.queues.contains { $0.hasPrefix("issuer/") })
        guard case .cardState(let body)? = message.notification.body else {
            Issue.record("not a card state: \(message.notification)")
            return
        }
        #expect(body.tokenState == .active && body.reasonCode == "IDV_OTP" && body.initiator == "wallet")
        await expectRPCError(.failedPrecondition, "ACTIVE") { try await submit(tsp, card, code) }
        #expect(tsp.published.of("CARD_STATE").count == before + 1)
    }

    /// Resends at once: each code is stored and delivered before the next is stored, so the code the cardholder
    /// gets last is the one that works. A resend whose delivery was slow had its code replaced by a later resend
    /// delivered first, and the cardholder's newest code was refused (and cost a try).
    @Test(.timeLimit(.minutes(3))) func resendsAtOnceDeliverTheirCodesInTheOrderTheyReplaceEachOther() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card)
        tsp.otp.holdNextDelivery()
        let slow = Task { try await tsp.idv.resendOTP(.init(digitalCardID: card)) }
        while !tsp.otp.isHolding { try await Task.sleep(for: .milliseconds(5)) }
        let fast = Task { try await tsp.idv.resendOTP(.init(digitalCardID: card)) }
        // Room for the second resend to overtake the held one, as it did.
        try await Task.sleep(for: .milliseconds(300))
        tsp.otp.releaseHeld()
        _ = try await slow.value
        _ = try await fast.value
        #expect(tsp.otp.sent.count == 3)
        let newest = try #require(tsp.otp.lastCode)
        let answer = try await submit(tsp, card, newest)
        #expect(answer.result == .success, "the newest code delivered was refused: \(answer)")
    }

    @Test func selectingTheSameMethodAgainSendsNothingNew() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        let first = try await select(tsp, card)
        tsp.clock.advance(seconds: 60)
        let again = try await select(tsp, card)
        #expect(!again.codeSent)
        #expect(again.codeExpiresAtMs == first.codeExpiresAtMs)
        #expect(again.method?.id == "otp-sms" && again.method?.type == .otpSms, "\(String(describing: again.method))")
        #expect(again.instructions.contains("sent to ***-***-1234 (method otp-sms)"), "\(again.instructions)")
        #expect(tsp.otp.sent.count == 1)
        #expect(try await submit(tsp, card, try #require(tsp.otp.lastCode)).result == .success)
    }

    /// A cardholder whose SMS went to an old phone number picks e-mail while the SMS code is valid: the answer was
    /// "OK" about the SMS code, nothing went by e-mail, and the cardholder waited out its 10 minutes. Now a code goes
    /// by e-mail, the SMS one no longer works, and a resend goes by e-mail too.
    @Test func anotherOTPMethodSendsACodeByItInPlaceOfTheOneOut() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card)
        let sms = try #require(tsp.otp.lastCode)
        tsp.clock.advance(seconds: 60)
        let email = try await select(tsp, card, "otp-email")
        #expect(email.codeSent && email.method?.id == "otp-email", "\(email)")
        #expect(tsp.otp.sent.count == 2 && tsp.otp.sent.last?.type == .otpEmail)
        #expect(email.codeExpiresAtMs == tsp.clock.now.unixMilliseconds + 600_000)
        #expect(
            email.instructions.hasSuffix("; the code sent before to ***-***-1234 (method otp-sms) no longer works"),
            "\(email.instructions)")
        _ = try await tsp.idv.resendOTP(.init(digitalCardID: card))
        #expect(tsp.otp.sent.count == 3 && tsp.otp.sent.last?.type == .otpEmail)
        let newest = try #require(tsp.otp.lastCode)
        #expect(try await submit(tsp, card, sms).result == .incorrectCode)
        #expect(try await submit(tsp, card, newest).result == .success)
    }

    /// Another method asked while a code is out, with the card's codes of the day used up, is answered with the code
    /// out, as with no resend left: a refusal read as if no code could be entered.
    @Test func anotherOTPMethodWithTheCardsCodesUsedUpLeavesTheCodeOut() async throws {
        let tsp = try Self.harness(codesPerCardPerDay: 1)
        let card = try await Self.steppedUp(tsp)
        let first = try await select(tsp, card)
        let other = try await select(tsp, card, "otp-email")
        #expect(!other.codeSent && other.method?.id == "otp-sms" && other.codeExpiresAtMs == first.codeExpiresAtMs)
        #expect(other.instructions.contains("the card has had the most codes"), "\(other.instructions)")
        #expect(tsp.otp.sent.count == 1)
        #expect(try await submit(tsp, card, try #require(tsp.otp.lastCode)).result == .success)
    }

    @Test func expiredCodeThenResend() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card, "otp-email")
        let old = try #require(tsp.otp.lastCode)
        tsp.clock.advance(seconds: 600)
        let expired = try await submit(tsp, card, old)
        #expect(expired.result == .expiredCode && expired.tokenState == .inactive)
        let resent = try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
        #expect(resent.codeExpiresAtMs == tsp.clock.now.unixMilliseconds + 600_000)
        #expect(tsp.otp.sent.count == 2 && tsp.otp.sent.last?.type == .otpEmail)
        // The answer names where the new code went, as select's does.
        #expect(resent.method?.id == "otp-email" && resent.method?.maskedValue == "j***@example.com")
        #expect(try await submit(tsp, card, try #require(tsp.otp.lastCode)).result == .success)
    }

    /// A cardholder whose code expired picks a method again, as the wallet app offers: a new code goes by that
    /// method. Once the token's 4 codes (the first and 3 more) are spent and the last has expired, selecting and
    /// resending both say that no more codes can be sent and what else the cardholder can do, instead of leaving the
    /// token waiting with select pointing at resend and resend at another method.
    @Test func anExpiredCodeIsReplacedBySelectingAgainUntilTheTokensCodesAreSpent() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card, "otp-sms")
        tsp.clock.advance(seconds: 600)
        let again = try await select(tsp, card, "otp-email")
        #expect(again.codeSent && again.method?.id == "otp-email" && again.triesLeft == 3)
        #expect(tsp.otp.sent.count == 2 && tsp.otp.sent.last?.type == .otpEmail)
        for _ in 0..<2 {
            tsp.clock.advance(seconds: 600)
            #expect(try await select(tsp, card, "otp-sms").codeSent)
        }
        #expect(tsp.otp.sent.count == 4)
        await expectRPCError(.failedPrecondition, "enter the code sent, which is still valid") {
            try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
        }
        // Selecting again reports the code out, and offers no resend the TSP would refuse.
        let out = try await select(tsp, card, "otp-email")
        #expect(!out.codeSent && !out.instructions.contains("ask for a resend"), "\(out.instructions)")
        #expect(out.instructions.contains("no more codes can be sent"), "\(out.instructions)")
        tsp.clock.advance(seconds: 600)
        let spent = "the last of the 4 one-time codes this token may get has expired and no more can be sent"
        await expectRPCError(.failedPrecondition, spent) { try await select(tsp, card, "otp-email") }
        await expectRPCError(.failedPrecondition, "(also offered: call-center)") {
            try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
        }
        #expect(tsp.otp.sent.count == 4)
        let history = try await tsp.control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: card))
        #expect(history.token?.state == .inactive)
        // The call centre is still a way out.
        _ = try await select(tsp, card, "call-center")
    }

    /// A new code in place of an expired one that the issuer could not deliver uses up no resend: the expired code
    /// stands as before, and selecting again sends one.
    @Test func aCodeReplacingAnExpiredOneThatReachedNoOneUsesNoResend() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card)
        tsp.clock.advance(seconds: 600)
        tsp.otp.setFailing(true)
        for _ in 0..<4 {
            await expectRPCError(.unavailable, "select the method again") { try await select(tsp, card, "otp-email") }
        }
        tsp.otp.setFailing(false)
        for _ in 0..<3 {
            #expect(try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card)).triesLeft == 3)
        }
        #expect(tsp.otp.sent.count == 4)
    }

    /// With one-time codes the only methods offered, the way out is adding the card again.
    @Test func withOnlyCodesOfferedTheWayOutIsAddingTheCardAgain() {
        let methods = [
            CardV1.IdvMethod(id: "otp-sms", type: .otpSms), CardV1.IdvMethod(id: "otp-email", type: .otpEmail),
        ]
        #expect(
            IdvService.otherWays(.codesExhausted(codes: 4), methods)
                == " (the issuer offered no method but one-time codes: delete the card and add it again)")
        #expect(IdvService.otherWays(.noCodeSent, methods) == "")
    }

    @Test func exhaustedTriesLockTheCode() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card)
        let code = try #require(tsp.otp.lastCode)
        #expect(try await submit(tsp, card, Self.wrong(code)).triesLeft == 2)
        #expect(try await submit(tsp, card, Self.wrong(code)).triesLeft == 1)
        #expect(try await submit(tsp, card, Self.wrong(code)).result == .incorrectCodeRetriesExceeded)
        let late = try await submit(tsp, card, code)
        #expect(late.result == .incorrectCodeRetriesExceeded && late.tokenState == .inactive)
        await expectRPCError(.failedPrecondition, "another verification method") {
            try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
        }
    }

    @Test func malformedCodesAreRefusedWithoutUsingATry() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card)
        let code = try #require(tsp.otp.lastCode)
        for malformed in ["abc", "12345", "1234567", "12a456", " 12345", "１２３４５６", "12345\n"] {
            await expectRPCError(.invalidArgument, "6 digits") { try await submit(tsp, card, malformed) }
        }
        #expect(!tsp.logs.lines.contains { $0.contains("12a456") })
        let wrong = try await submit(tsp, card, Self.wrong(code))
        #expect(wrong.result == .incorrectCode && wrong.triesLeft == 2)
        let again = try await select(tsp, card)
        #expect(!again.codeSent && again.triesLeft == 2)
        #expect(try await submit(tsp, card, code).result == .success)
    }

    @Test func resendsAreBounded() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        await expectRPCError(.failedPrecondition, "select an OTP method first") {
            try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
        }
        _ = try await select(tsp, card)
        for _ in 0..<3 { _ = try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card)) }
        await expectRPCError(.failedPrecondition, "no more codes") {
            try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
        }
        #expect(tsp.otp.sent.count == 4)
        #expect(Set(tsp.otp.sent.map(\.code)).count > 1)
    }

    /// The issuer sent the code, but its answer never came (here the wallet gave up while the TSP waited, which
    /// cancels the TSP's call): the code stays valid, since the cardholder may hold it. It used to be withdrawn as
    /// undelivered, and the SMS the cardholder got was refused ("no code was sent"). Selecting again reports the code
    /// out, and sends none.
    @Test func aFirstCodeWhoseAnswerWasLostStaysValid() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        tsp.otp.hangAfterSendingNext()
        try await Self.giveUpOnceSent(tsp, count: 1) {
            try await tsp.idv.selectIdvMethod(TspV1.SelectIdvMethodRequest(digitalCardID: card, methodID: "otp-sms"))
        }
        let code = try #require(tsp.otp.lastCode)
        try await waitForLog(tsp, "one-time code may have been sent")
        let again = try await select(tsp, card)
        #expect(!again.codeSent && again.instructions.contains("a code was already sent"), "\(again)")
        #expect(tsp.otp.sent.count == 1)
        #expect(try await submit(tsp, card, code).result == .success)
    }

    /// A resend whose answer was lost: either code may be the cardholder's, the new one or the one it replaced, and
    /// each is right.
    @Test(arguments: [false, true]) func aResendWhoseAnswerWasLostLeavesBothCodesValid(enterTheNewOne: Bool)
        async throws
    {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card)
        let first = try #require(tsp.otp.lastCode)
        tsp.otp.hangAfterSendingNext()
        try await Self.giveUpOnceSent(tsp, count: 2) {
            try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
        }
        let second = try #require(tsp.otp.lastCode)
        try #require(second != first && tsp.otp.sent.count == 2)
        try await waitForLog(tsp, "one-time code may have been sent")
        let wrong = first == "000000" || second == "000000" ? "999999" : "000000"
        #expect(try await submit(tsp, card, wrong).result == .incorrectCode)
        #expect(try await submit(tsp, card, enterTheNewOne ? second : first).result == .success)
    }

    /// Whether a failed SendOtp may have been carried out: only when the request went out and no answer came.
    @Test func aLostAnswerIsToldFromARefusal() {
        #expect(IdvService.deliveryMayHaveHappened(RPCError(.deadlineExceeded, "the deadline passed")))
        #expect(IdvService.deliveryMayHaveHappened(RPCError(.cancelled, "cancelled")))
        #expect(!IdvService.deliveryMayHaveHappened(RPCError(.unavailable, "the SMS gateway is down")))
        #expect(!IdvService.deliveryMayHaveHappened(RPCError(.invalidArgument, "no such method")))
        let neverSent = RPCError(.deadlineExceeded, "not connected", cause: NotConnected(reason: "refused"))
        #expect(!IdvService.deliveryMayHaveHappened(neverSent))
    }

    /// Runs `call` until the fake issuer has sent its `count`th code (and holds its answer), then cancels it, as a
    /// wallet that gives up does; the call fails, and once the TSP has logged the code's outcome (its own call to the
    /// issuer cancelled in turn), the held answer is let go: let go first, it could reach the TSP as a delivery.
    static func giveUpOnceSent(
        _ tsp: TSPHarness, count: Int, _ call: @escaping @Sendable () async throws -> some Sendable
    ) async throws {
        let task = Task { try await call() }
        for _ in 0..<3000 where !(tsp.otp.sent.count == count && tsp.otp.isHolding) {
            try await Task.sleep(for: .milliseconds(20))
        }
        try #require(tsp.otp.sent.count == count && tsp.otp.isHolding)
        task.cancel()
        let result = await task.result
        #expect(throws: (any Error).self) { try result.get() }
        for _ in 0..<3000 where !tsp.logs.lines.contains(where: { $0.contains("one-time code may have been sent") }) {
            try await Task.sleep(for: .milliseconds(20))
        }
        tsp.otp.releaseHeld()
    }

    func waitForLog(_ tsp: TSPHarness, _ text: String) async throws {
        for _ in 0..<500 where !tsp.logs.lines.contains(where: { $0.contains(text) }) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(tsp.logs.lines.contains { $0.contains(text) }, "\(tsp.logs.lines)")
    }

    /// A first code the issuer could not deliver is forgotten: selecting the method again sends one (it used to
    /// answer that a code was out and still valid, while the cardholder had received nothing), and uses no resend.
    /// A resend that could not be delivered is asked for again.
    @Test func failedDeliveryIsUnavailableAndSelectingAgainSendsACode() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        tsp.otp.setFailing(true)
        // The issuer's status is named as it is on the wire, not by its Swift case name (unavailable).
        await expectRPCError(
            .unavailable,
            "the issuer could not deliver the code (UNAVAILABLE): the SMS gateway is down; select the method again"
        ) { try await select(tsp, card) }
        #expect(tsp.otp.sent.isEmpty)
        tsp.otp.setFailing(false)
        let again = try await select(tsp, card)
        #expect(again.codeSent && again.triesLeft == 3, "\(again)")
        #expect(tsp.otp.sent.count == 1)
        let code = try #require(tsp.otp.lastCode)

        // Resends that reach no one leave the code out valid and use up no resend: after three of them a fourth
        // still goes (three are allowed).
        tsp.otp.setFailing(true)
        for _ in 0..<3 {
            await expectRPCError(.unavailable, "ask for a resend") {
                try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
            }
        }
        tsp.otp.setFailing(false)
        let resent = try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
        #expect(resent.triesLeft == 3)
        #expect(tsp.otp.sent.count == 2)
        let latest = try #require(tsp.otp.lastCode)
        if latest != code { #expect(try await submit(tsp, card, code).result == .incorrectCode) }
        #expect(try await submit(tsp, card, latest).result == .success)
    }

    /// The code out stays valid when a resend could not be delivered.
    @Test func aResendThatReachedNoOneLeavesTheCodeOutValid() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        _ = try await select(tsp, card)
        let code = try #require(tsp.otp.lastCode)
        tsp.otp.setFailing(true)
        await expectRPCError(.unavailable, "ask for a resend") {
            try await tsp.idv.resendOTP(TspV1.ResendOtpRequest(digitalCardID: card))
        }
        #expect(try await submit(tsp, card, code).result == .success)
    }

    @Test func badRequestsAreRefused() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        await expectRPCError(.notFound, "offered: otp-sms, otp-email, call-center") {
            try await select(tsp, card, "app-1")
        }
        await expectRPCError(.notFound, "no token") { try await select(tsp, "DNITHE-none") }
        await expectRPCError(.invalidArgument, "code is required") { try await submit(tsp, card, "") }
        await expectRPCError(.invalidArgument, "digital_card_id") { try await select(tsp, "") }
    }

    /// A token approved outright is live and was offered no method: selecting one says it is ACTIVE and needs no
    /// ID&V, rather than that the method was not offered.
    @Test func anActiveTokenIsRefusedForItsState() async throws {
        let tsp = try TSPHarness.make()
        let response = try await tsp.digitize(try await tsp.eligibleVisa())
        try #require(response.tokenState == .active)
        await expectRPCError(.failedPrecondition, "is ACTIVE; ID&V is only for an INACTIVE token") {
            try await select(tsp, response.digitalCardID)
        }
    }

    @Test func deactivatedTokenIsRefused() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        _ = try database.execute("UPDATE tokens SET state = 'DEACTIVATED' WHERE digital_card_id = ?", [card])
        await expectRPCError(.failedPrecondition, "DEACTIVATED") { try await select(tsp, card) }
        await expectRPCError(.failedPrecondition, "DEACTIVATED") { try await submit(tsp, card, "123456") }
        await expectRPCError(.failedPrecondition, "DEACTIVATED") {
            try await tsp.issuerIdv.activateToken(TspV1.ActivateTokenRequest(digitalCardID: card))
        }
        #expect(tsp.otp.sent.isEmpty)
    }

    /// Two activations at once: one changes the token and notifies, the other is a repeat. Each used to compare
    /// with the state it read before waiting its turn, so both answered changed and both published ACTIVE.
    @Test func concurrentActivationsChangeAndNotifyOnce() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        let before = tsp.published.publishes.count
        let answers = try await withThrowingTaskGroup(of: TspV1.ActivateTokenResponse.self) { group in
            for _ in 0..<8 {
                group.addTask { try await tsp.issuerIdv.activateToken(TspV1.ActivateTokenRequest(digitalCardID: card)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.tokenState == .active })
        #expect(answers.filter(\.changed).count == 1)
        #expect(tsp.published.publishes.count - before == 1)
        // Every answer names the version the one change made, as its CARD_STATE does.
        let published = tsp.published.of("CARD_STATE").last { $0.notification.cardID == card }
        guard case .cardState(let body)? = published?.notification.body else {
            Issue.record("no CARD_STATE for the activation")
            return
        }
        #expect(Set(answers.map(\.stateVersion)) == [body.stateVersion])
    }

    @Test func callCentreActivation() async throws {
        let tsp = try TSPHarness.make()
        let card = try await Self.steppedUp(tsp)
        let selected = try await select(tsp, card, "call-center")
        #expect(!selected.codeSent)
        #expect(selected.instructions.contains("+1 800 555 0100"))
        #expect(tsp.otp.sent.isEmpty)

        let otherIssuer = TspV1.IssuerIdv.Client(
            TSPHarness.connect(tsp.router, as: PeerIdentity(role: .issuer, nodeID: "issuer-2")))
        await expectRPCError(.permissionDenied, "another issuer") {
            try await otherIssuer.activateToken(TspV1.ActivateTokenRequest(digitalCardID: card))
        }
        let walletCaller = TspV1.IssuerIdv.Client(
            TSPHarness.connect(tsp.router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1")))
        await expectRPCError(.permissionDenied, "allowed: issuer") {
            try await walletCaller.activateToken(TspV1.ActivateTokenRequest(digitalCardID: card))
        }

        let activated = try await tsp.issuerIdv.activateToken(
            TspV1.ActivateTokenRequest(digitalCardID: card, reason: "call centre: cardholder verified by agent 7"))
        #expect(activated.tokenState == .active && activated.changed)
        let again = try await tsp.issuerIdv.activateToken(TspV1.ActivateTokenRequest(digitalCardID: card))
        #expect(again.tokenState == .active && !again.changed)
        let history = try await tsp.control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: card))
        #expect(history.events.last?.actor == "issuer:bank-a")
        #expect(history.events.last?.reason == "call centre: cardholder verified by agent 7")
        #expect(history.events.filter { $0.toState == .active }.count == 1)
    }
}
