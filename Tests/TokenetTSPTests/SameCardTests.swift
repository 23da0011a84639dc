import Foundation
import Testing
import TokenetStorage
import TokenetWire

@testable import TokenetTSP

/// One card, one live token per wallet account and device: a new digitization replaces a step-up left waiting,
/// no ID&V path activates a token beside a live one of its card, and a step-up nobody completes is deactivated.
@Suite struct SameCardTests {
    /// The ways a token waiting for ID&V is activated.
    enum Activation: String, CaseIterable, Sendable {
        case oneTimeCode, callCentre, issuerApp
    }

    /// A TSP whose issuer names the card's account (for in-app activation) and whose user-1 owns it.
    static func make(configuration: TSPConfiguration = TSPHarness.configuration) throws -> (
        TSPHarness, FakeAccessTokens
    ) {
        let tokens = FakeAccessTokens()
        tokens.own("user-1", "acct-1")
        let issuer = FakeIssuer()
        issuer.set(accountID: "acct-1")
        return (try TSPHarness.make(configuration: configuration, issuer: issuer, accessTokens: tokens), tokens)
    }

    /// The Visa card added again and stepped up: its new INACTIVE token.
    static func stepUp(_ tsp: TSPHarness) async throws -> String {
        tsp.issuer.set(.stepUpAll)
        let response = try await tsp.digitize(try await tsp.eligibleVisa())
        try #require(response.tokenState == .inactive, "\(response)")
        return response.digitalCardID
    }

    static func activate(_ tsp: TSPHarness, _ tokens: FakeAccessTokens, _ card: String, by path: Activation)
        async throws
    {
        switch path {
        case .oneTimeCode:
            _ = try await tsp.idv.selectIdvMethod(
                TspV1.SelectIdvMethodRequest(digitalCardID: card, methodID: "otp-sms"))
            let code = try #require(tsp.otp.sent.last(where: { $0.digitalCardID == card })?.code)
            let result = try await tsp.idv.submitOTP(TspV1.SubmitOtpRequest(digitalCardID: card, code: code))
            try #require(result.result == .success, "\(result)")
        case .callCentre:
            _ = try await tsp.issuerIdv.activateToken(TspV1.ActivateTokenRequest(digitalCardID: card))
        case .issuerApp:
            let accessToken = tokens.mint(user: "user-1", expiresAt: tsp.clock.now.addingTimeInterval(300))
            _ = try await tsp.issuerIdv.activateDigitalCard(
                TspV1.ActivateDigitalCardRequest(digitalCardID: card, accessToken: accessToken))
        }
    }

    static func history(_ tsp: TSPHarness, _ card: String) async throws -> TspV1.TokenHistoryResponse {
        try await tsp.control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: card))
    }

    static func state(_ tsp: TSPHarness, _ card: String) async throws -> CardV1.TokenState {
        try await history(tsp, card).token?.state ?? .unspecified
    }

    /// The CARD_STATE messages published about `card`: state, reason and initiator.
    static func cardStates(_ tsp: TSPHarness, _ card: String) -> [String] {
        tsp.published.of("CARD_STATE").filter { $0.notification.cardID == card }.compactMap { message in
            guard case .cardState(let body)? = message.notification.body else { return nil }
            return "\(body.tokenState) \(body.reasonCode) \(body.initiator)"
        }
    }

    /// The cardholder gave up on a step-up and added the card again: the new token replaces the old one, which is
    /// deactivated with the reason in its history and its wallet and issuer app told, and can no longer be verified.
    @Test func addingTheCardAgainReplacesTheStepUpLeftWaiting() async throws {
        let (tsp, tokens) = try Self.make()
        let first = try await Self.stepUp(tsp)
        let second = try await Self.stepUp(tsp)
        #expect(try await Self.state(tsp, first) == .deactivated)
        #expect(try await Self.state(tsp, second) == .inactive)
        let last = try #require(try await Self.history(tsp, first).events.last)
        #expect(last.actor == "tsp" && last.reason.contains("replaced by a new digitization"), "\(last)")
        #expect(last.reason.contains(second))
        #expect(Self.cardStates(tsp, first) == ["deactivated REPLACED tsp"])
        // The refusal names the token that replaced it, the one to verify: told to add the card again, the
        // cardholder made a third.
        let replaced =
            "replaced by a new digitization of the same card on this device (token \"\(second)\")); "
            + "verify token \"\(second)\" instead"
        await expectRPCError(.failedPrecondition, replaced) {
            try await tsp.idv.selectIdvMethod(TspV1.SelectIdvMethodRequest(digitalCardID: first, methodID: "otp-sms"))
        }
        await expectRPCError(.failedPrecondition, replaced) {
            try await tsp.issuerIdv.activateToken(TspV1.ActivateTokenRequest(digitalCardID: first))
        }
        await expectRPCError(.failedPrecondition, replaced) {
            try await tsp.idv.submitOTP(TspV1.SubmitOtpRequest(digitalCardID: first, code: "123456"))
        }
        try await Self.activate(tsp, tokens, second, by: .oneTimeCode)
        #expect(try await Self.state(tsp, second) == .active)
        // Its replacement is live now: the refusal says the card is in the wallet already.
        await expectRPCError(.failedPrecondition, "the card is in the wallet already, as token \"\(second)\"") {
            try await tsp.idv.selectIdvMethod(TspV1.SelectIdvMethodRequest(digitalCardID: first, methodID: "otp-sms"))
        }
    }

    /// A replacement deleted since ends the chain: the refusal names the card's latest token and why it went.
    @Test func aReplacementDeletedSinceSaysToAddTheCardAgain() async throws {
        let (tsp, _) = try Self.make()
        let first = try await Self.stepUp(tsp)
        let second = try await Self.stepUp(tsp)
        _ = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1).changeTokenState(
            LifecycleTests.change(second, .delete, "FRAUD_SUSPECTED"))
        await expectRPCError(
            .failedPrecondition,
            "; the card's latest token, \"\(second)\", is deactivated too (by tsp, FRAUD_SUSPECTED); add the card again"
        ) {
            try await tsp.idv.selectIdvMethod(TspV1.SelectIdvMethodRequest(digitalCardID: first, methodID: "otp-sms"))
        }
    }

    /// An approved new digitization replaces the step-up too; a declined one replaces nothing, so the step-up the
    /// cardholder can still complete stays.
    @Test func anApprovedDigitizationReplacesTheStepUpAndADeclinedOneDoesNot() async throws {
        let (tsp, _) = try Self.make()
        let waiting = try await Self.stepUp(tsp)
        tsp.issuer.set(.decline("not now"))
        let declined = try await tsp.digitize(try await tsp.eligibleVisa())
        #expect(declined.decision == .declined)
        #expect(try await Self.state(tsp, waiting) == .inactive)
        #expect(Self.cardStates(tsp, waiting).isEmpty)
        tsp.issuer.set(.approve)
        let approved = try await tsp.digitize(try await tsp.eligibleVisa())
        #expect(approved.tokenState == .active)
        #expect(try await Self.state(tsp, waiting) == .deactivated)
        #expect(Self.cardStates(tsp, waiting) == ["deactivated REPLACED tsp"])
    }

    /// Two tokens of one card waiting for ID&V on one device, as a TSP without the replacement rule left them:
    /// once one is activated, by any path, the other cannot be, by any path.
    @Test(arguments: Activation.allCases, Activation.allCases)
    func noActivationPathGivesTheCardASecondLiveToken(first: Activation, second: Activation) async throws {
        let (tsp, tokens) = try Self.make()
        let older = try await Self.stepUp(tsp)
        let newer = try await Self.stepUp(tsp)
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        _ = try database.execute("UPDATE tokens SET state = 'INACTIVE' WHERE digital_card_id = ?", [older])
        try await Self.activate(tsp, tokens, newer, by: first)
        await expectRPCError(.failedPrecondition, "already live in this wallet on this device as token \"\(newer)\"") {
            try await Self.activate(tsp, tokens, older, by: second)
        }
        #expect(try await Self.state(tsp, older) == .inactive)
        #expect(try await Self.state(tsp, newer) == .active)
    }

    /// A SUSPENDED token is live too: the other token is not activated beside it, and a token resumed while
    /// another of its card is ACTIVE is refused.
    @Test func aSuspendedTokenIsLiveAndResumingIsChecked() async throws {
        let (tsp, tokens) = try Self.make()
        let older = try await Self.stepUp(tsp)
        let newer = try await Self.stepUp(tsp)
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        _ = try database.execute("UPDATE tokens SET state = 'INACTIVE' WHERE digital_card_id = ?", [older])
        try await Self.activate(tsp, tokens, newer, by: .callCentre)
        let lifecycle = LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1)
        _ = try await lifecycle.changeTokenState(LifecycleTests.change(newer, .suspend))
        await expectRPCError(.failedPrecondition, "as token \"\(newer)\" (SUSPENDED)") {
            try await Self.activate(tsp, tokens, older, by: .callCentre)
        }
        _ = try database.execute("UPDATE tokens SET state = 'ACTIVE' WHERE digital_card_id = ?", [older])
        await expectRPCError(.failedPrecondition, "as token \"\(older)\" (ACTIVE)") {
            try await lifecycle.changeTokenState(LifecycleTests.change(newer, .resume))
        }
        #expect(try await Self.state(tsp, newer) == .suspended)
    }

    /// A step-up nobody completes within `step_up_ttl_s` is deactivated: it cannot be activated late, its parties
    /// are told, and the card can be added again.
    @Test(arguments: Activation.allCases)
    func aStepUpNobodyCompletesIsDeactivatedWhenItsWindowEnds(path: Activation) async throws {
        var configuration = TSPHarness.configuration
        configuration.stepUpValidity = .seconds(3600)
        let (tsp, tokens) = try Self.make(configuration: configuration)
        let waiting = try await Self.stepUp(tsp)
        tsp.clock.advance(seconds: 3599)
        _ = try await tsp.idv.selectIdvMethod(TspV1.SelectIdvMethodRequest(digitalCardID: waiting, methodID: "otp-sms"))
        #expect(try await Self.state(tsp, waiting) == .inactive)
        tsp.clock.advance(seconds: 1)
        // The refusal gives the token's own reason, which says the card can be added again (once).
        await expectRPCError(
            .failedPrecondition, "(by tsp, step-up not completed within 3600 s; the card can be added again)"
        ) {
            try await Self.activate(tsp, tokens, waiting, by: path)
        }
        #expect(try await Self.state(tsp, waiting) == .deactivated)
        let last = try #require(try await Self.history(tsp, waiting).events.last)
        #expect(last.actor == "tsp" && last.reason.contains("step-up not completed within 3600 s"), "\(last)")
        #expect(Self.cardStates(tsp, waiting) == ["deactivated STEP_UP_EXPIRED tsp"])
        tsp.issuer.set(.approve)
        #expect(try await tsp.digitize(try await tsp.eligibleVisa()).tokenState == .active)
    }

    /// The TSP's own sweep deactivates an abandoned step-up with no call at all, and tells its parties: a quiet
    /// sandbox kept it INACTIVE until some other card was added or verified.
    @Test func theSweepDeactivatesAnAbandonedStepUpWithNoCall() async throws {
        var configuration = TSPHarness.configuration
        configuration.stepUpValidity = .seconds(10)
        let tokens = FakeAccessTokens()
        let issuer = FakeIssuer()
        let background = BackgroundTasks()
        defer { background.cancel() }
        let tsp = try TSPHarness.make(
            configuration: configuration, issuer: issuer, accessTokens: tokens, background: background)
        let waiting = try await Self.stepUp(tsp)
        tsp.clock.advance(seconds: 10)
        // The sweep runs every second (a tenth of the window, at least a second).
        let deadline = ContinuousClock.now + .seconds(20)
        while try await Self.state(tsp, waiting) != .deactivated, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await Self.state(tsp, waiting) == .deactivated)
        #expect(Self.cardStates(tsp, waiting) == ["deactivated STEP_UP_EXPIRED tsp"])
    }

    /// Adding any card is a moment the TSP deactivates abandoned step-ups, even with no ID&V call for them.
    @Test func aDigitizationDeactivatesAbandonedStepUps() async throws {
        var configuration = TSPHarness.configuration
        configuration.stepUpValidity = .seconds(3600)
        let (tsp, _) = try Self.make(configuration: configuration)
        let waiting = try await Self.stepUp(tsp)
        tsp.clock.advance(seconds: 3600)
        let other = CardV1.DeviceInfo(deviceID: "device-2", deviceType: "PHONE", deviceName: "Tablet")
        let eligibility = try await tsp.checkEligibility(
            .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.mastercard))), device: other)
        tsp.issuer.set(.approve)
        _ = try await tsp.digitize(eligibility, device: other)
        #expect(try await Self.state(tsp, waiting) == .deactivated)
    }
}
