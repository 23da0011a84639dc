import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// Digitize over the wire: the issuer's decisions, the stand-in, receipt checks and idempotency.
@Suite struct DigitizeTests {
    @Test func approvedTokenIsActiveWithItsAuditTrail() async throws {
        let tsp = try TSPHarness.make()
        let response = try await tsp.digitize(try await tsp.eligibleVisa(), requestID: "req-1")
        #expect(response.decision == .approved)
        #expect(response.tokenState == .active)
        #expect(response.decidedBy == "issuer")
        #expect(response.digitalCardID.hasPrefix(DigitalCardID.visaPrefix))
        #expect(response.scheme == .visa)
        #expect(response.panLast4 == "1111")
        #expect(response.tokenLast4.count == 4)
        #expect(response.tokenExpiry == "11/29")
        #expect(tsp.issuer.state.withLock { $0.maskedPANs } == ["************1111"])
        // The issuer hears which wallet node the token lives in: only that node may open its app for the token.
        #expect(tsp.issuer.state.withLock { $0.walletNodeIDs } == ["wallet-1"])

        let history = try await tsp.control.tokenHistory(
            TspV1.TokenHistoryRequest(digitalCardID: response.digitalCardID))
        #expect(history.token?.state == .active)
        #expect(history.events.map(\.toState) == [.inactive, .active])
        #expect(history.events.map(\.fromState) == [.unspecified, .inactive])
        #expect(history.events.map(\.actor) == ["tsp", "issuer:bank-a"])
        #expect(history.events.allSatisfy { !$0.traceID.isEmpty && $0.atMs > 0 })

        let listed = try await tsp.control.listTokens(TspV1.ListTokensRequest(walletAccountID: TSPHarness.account))
        #expect(listed.tokens.map(\.digitalCardID) == [response.digitalCardID])
        #expect(listed.tokens.first?.issuerID == "bank-a")
        #expect(listed.tokens.first?.deviceID == "device-1")
        let none = try await tsp.control.listTokens(TspV1.ListTokensRequest(walletAccountID: "someone-else"))
        #expect(none.tokens.isEmpty)
    }

    /// Risk scores outside 1–5, or a recommendation no one declared, are refused: they reached the issuer and the
    /// stand-in rule as if they meant something.
    @Test func riskOutsideItsRangeIsRefused() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let eligibility = try await tsp.eligibleVisa()
        await expectRPCError(.invalidArgument, "risk.account_score 9 is outside 1 (lowest risk) to 5 (highest)") {
            try await tsp.digitize(eligibility, risk: .init(accountScore: 9, deviceScore: 1, recommendation: .approve))
        }
        await expectRPCError(.invalidArgument, "risk.recommendation 7 is not a recommendation") {
            try await tsp.digitize(
                eligibility, risk: .init(accountScore: 1, deviceScore: 1, recommendation: .init(rawValue: 7)))
        }
        #expect(try await tsp.digitize(eligibility).decision == .approved)
    }

    /// Which part of the T&C acceptance is missing or wrong is named: one message for all three cases sent a wallet
    /// looking for which.
    @Test func aMissingOrWrongAcceptanceIsNamed() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let eligibility = try await tsp.eligibleVisa()
        guard case .termsAndConditions(let terms) = eligibility.terms else {
            Issue.record("expected T&C")
            return
        }
        func digitize(_ id: String, _ at: UInt64) async throws -> TspV1.DigitizeResponse {
            try await tsp.wallet.digitize(
                TspV1.DigitizeRequest(
                    requestID: UUID().uuidString, eligibilityReceipt: eligibility.eligibilityReceipt,
                    acceptedTermsID: id, termsAcceptedAtMs: at, device: TSPHarness.device,
                    walletAccountID: TSPHarness.account, risk: TSPHarness.lowRisk))
        }
        await expectRPCError(.failedPrecondition, "first: send terms_accepted_at_ms (when the cardholder accepted") {
            try await digitize(terms.id, 0)
        }
        await expectRPCError(.failedPrecondition, "first: send accepted_terms_id \"\(terms.id)\"") {
            try await digitize("", 1_764_647_000_000)
        }
        // Both parts wrong: both named in one answer.
        await expectRPCError(
            .failedPrecondition,
            "first: accepted_terms_id \"other-terms\" is not the terms and conditions the eligibility check gave "
                + "(\"\(terms.id)\"); send terms_accepted_at_ms"
        ) {
            try await digitize("other-terms", 0)
        }
        // With the date: the number, 13 digits or more, is masked on its way out of a node.
        await expectRPCError(
            .failedPrecondition, "terms_accepted_at_ms 99999999999999 (5138-11-16T09:46:39Z) is in the future"
        ) {
            try await digitize(terms.id, 99_999_999_999_999)
        }
        await expectRPCError(.failedPrecondition, "(after the year 9999) is in the future") {
            try await digitize(terms.id, UInt64.max)
        }
    }

    @Test func mastercardTokenUsesItsPrefix() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let response = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        #expect(response.digitalCardID.hasPrefix(DigitalCardID.mastercardPrefix))
        #expect(response.scheme == .mastercard)
    }

    @Test func declineLeavesNoUsableToken() async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.decline("account closed"))
        let response = try await tsp.digitize(try await tsp.eligibleVisa())
        #expect(response.decision == .declined)
        #expect(response.tokenState == .deactivated)
        #expect(response.digitalCardID.isEmpty)
        #expect(response.tokenLast4.isEmpty)
        #expect(response.declineReason == "account closed")
        #expect(response.decidedBy == "issuer")
        let tokens = try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens
        #expect(tokens.map(\.state) == [.deactivated])
    }

    /// Two receipts for one card, both taken before either was digitized (the wallet added the card twice): each
    /// was eligible, and each became an ACTIVE token on the same device. The second is declined; a retry of the
    /// first still answers as before.
    @Test func aCardAddedTwiceBeforeDigitizingBecomesOneLiveToken() async throws {
        let tsp = try TSPHarness.make()
        let first = try await tsp.eligibleVisa()
        let second = try await tsp.eligibleVisa()
        let firstRequest = UUID().uuidString
        let approved = try await tsp.digitize(first, requestID: firstRequest)
        #expect(approved.decision == .approved && approved.tokenState == .active)
        let declined = try await tsp.digitize(second)
        #expect(declined.decision == .declined && declined.tokenState == .deactivated, "\(declined)")
        #expect(declined.declineReason.contains("already in this wallet on this device"), "\(declined)")
        #expect(declined.decidedBy == "tsp" && declined.digitalCardID.isEmpty)
        #expect(try await tsp.digitize(first, requestID: firstRequest) == approved)
        let tokens = try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens
        #expect(tokens.map(\.state).sorted { $0.rawValue < $1.rawValue } == [.active, .deactivated], "\(tokens)")
        // The issuer approved the second token too and keeps it as its card's: its app is told it is deactivated,
        // the wallet (which only ever got the decline) is not.
        let declinedToken = try #require(tokens.first { $0.state == .deactivated })
        let told = tsp.published.of("CARD_STATE").filter { $0.notification.cardID == declinedToken.digitalCardID }
        #expect(told.map(\.queues) == [["issuer/issuer-1"]], "\(told)")
        guard case .cardState(let body)? = told.first?.notification.body else {
            Issue.record("no CARD_STATE body: \(told)")
            return
        }
        #expect(body.tokenState == .deactivated && body.reasonCode == "ALREADY_PROVISIONED")
    }

    @Test func stepUpLeavesTokenInactiveWithMethods() async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.stepUp)
        let response = try await tsp.digitize(try await tsp.eligibleVisa())
        #expect(response.decision == .requireAdditionalAuthentication)
        #expect(response.tokenState == .inactive)
        #expect(response.idvMethods.map(\.type) == [.otpSms, .appToApp])
        #expect(!response.digitalCardID.isEmpty)
        let history = try await tsp.control.tokenHistory(
            TspV1.TokenHistoryRequest(digitalCardID: response.digitalCardID))
        #expect(history.events.last?.reason.contains("additional authentication") == true)
    }

    @Test func slowIssuerMeansStandInApprovalForLowRisk() async throws {
        let tsp = try TSPHarness.make(configuration: TSPHarness.impatient)
        tsp.issuer.set(.slow)
        let response = try await tsp.digitize(try await tsp.eligibleVisa(), risk: TSPHarness.lowRisk)
        #expect(response.decision == .approved)
        #expect(response.tokenState == .active)
        #expect(response.decidedBy == "stand-in")
        let history = try await tsp.control.tokenHistory(
            TspV1.TokenHistoryRequest(digitalCardID: response.digitalCardID))
        #expect(history.events.last?.actor == "stand-in")
        #expect(history.events.last?.reason.contains("the issuer did not answer within ") == true)
    }

    /// A low-risk Digitize of `eligibility`'s card, its terms accepted, for calls made with options of their own.
    static func lowRiskRequest(_ tsp: TSPHarness, _ eligibility: TspV1.CheckEligibilityResponse)
        -> TspV1.DigitizeRequest
    {
        var request = TspV1.DigitizeRequest(
            requestID: UUID().uuidString, eligibilityReceipt: eligibility.eligibilityReceipt, device: TSPHarness.device,
            walletAccountID: TSPHarness.account, risk: TSPHarness.lowRisk)
        if case .termsAndConditions(let terms) = eligibility.terms {
            request.acceptedTermsID = terms.id
            request.termsAcceptedAtMs = tsp.clock.now.unixMilliseconds
        }
        return request
    }

    /// The TSP gives the issuer what the wallet's deadline leaves, less room to decide without it (its own checks,
    /// its stand-in rule) and answer: given all of it, the issuer's call and the wallet's ended at once, the wallet got
    /// UNAVAILABLE, the digitization stayed pending, and every retry asked the issuer again, so the stand-in never
    /// decided. The issuer records the time it was given, which can only shrink on the way (a loaded machine's
    /// delays), so the bound holds whatever the load: a second of the wallet's minute is kept.
    @Test func theIssuerIsGivenWhatTheWalletsDeadlineLeavesLessRoomToAnswer() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let options = CallOptions(timeout: .seconds(60))
        let eligibility = try await tsp.wallet.checkEligibility(
            TspV1.CheckEligibilityRequest(
                requestID: UUID().uuidString, eligibilityData: TspV1.EligibilityData(inputMethod: .manual),
                walletAccountID: TSPHarness.account, device: TSPHarness.device,
                instrument: .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa)))),
            options: options)
        #expect(eligibility.eligible)
        let request = Self.lowRiskRequest(tsp, eligibility)
        #expect(try await tsp.wallet.digitize(request, options: options).decidedBy == "issuer")
        let given = tsp.issuer.state.withLock { $0.timeGiven }
        #expect(given.count == 2)
        for time in given { #expect(time <= .seconds(59), "\(given)") }
        // Outside a wallet's call (a resumed digitization), the issuer deadline alone applies.
        #expect(CallOptions.answeringInTime(atMost: .seconds(5)).timeout == .seconds(5))
    }

    /// An issuer given only what a short wallet deadline left, and silent in it, is no slow issuer: nothing is
    /// decided, the wallet hears how long a deadline the stand-in needs, and a retry asks the issuer again. Deciding
    /// by the stand-in let a wallet skip the issuer by sending a short deadline.
    @Test func aShortWalletDeadlineDoesNotLetTheStandInDecide() async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.slow)
        let eligibility = try await tsp.eligibleVisa()
        let request = Self.lowRiskRequest(tsp, eligibility)
        let error = await #expect(throws: RPCError.self) {
            try await tsp.wallet.digitize(request, options: CallOptions(timeout: .seconds(5)))
        }
        // On a loaded machine the wallet's own deadline may come first; either way nothing was decided.
        if error?.code == .unavailable {
            #expect(
                error?.message.contains("the TSP's stand-in decides only once the issuer has had its 120000 ms")
                    == true,
                "\(String(describing: error))")
        } else {
            #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
        }
        tsp.issuer.set(.approve)
        let retried = try await tsp.wallet.digitize(request, options: CallOptions(timeout: .seconds(120)))
        #expect(retried.decidedBy == "issuer" && retried.tokenState == .active, "\(retried)")
    }

    @Test func unavailableIssuerMeansStandInDeclineForHighRisk() async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.unavailable)
        let response = try await tsp.digitize(try await tsp.eligibleVisa(), risk: TSPHarness.highRisk)
        #expect(response.decision == .declined)
        #expect(response.decidedBy == "stand-in")
        #expect(response.declineReason.contains("above the stand-in approval limit"))
    }

    /// A Digitize without its wallet account or device is told which field is missing, where it was refused as a
    /// receipt for "another" account or device; a request id holding a card number is refused; a request id
    /// replayed with another device is refused as the first request with it would have been, where it was answered
    /// with the first device's token.
    @Test func theAccountAndDeviceAreRequiredAndCheckedOnAReplay() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        await expectRPCError(.invalidArgument, "wallet_account_id is required") {
            try await tsp.digitize(eligibility, account: "")
        }
        await expectRPCError(.invalidArgument, "device.device_id is required") {
            try await tsp.digitize(eligibility, device: CardV1.DeviceInfo())
        }
        // Kept with the token and forwarded to the issuer in clear: an id that holds a card number, or one of no
        // bounded length, is refused before anything is stored.
        await expectRPCError(.invalidArgument, "request_id must be free of card numbers") {
            try await tsp.digitize(eligibility, requestID: "req-4111-1111-1111-1111")
        }
        await expectRPCError(.invalidArgument, "request_id must be 1 to 64 characters") {
            try await tsp.digitize(eligibility, requestID: String(repeating: "r", count: 65))
        }
        let token = try await tsp.digitize(eligibility, requestID: "replayed-1")
        let otherDevice = CardV1.DeviceInfo(deviceID: "device-9", deviceType: "PHONE")
        await expectRPCError(.permissionDenied, "issued for another device") {
            try await tsp.digitize(eligibility, requestID: "replayed-1", device: otherDevice)
        }
        #expect(try await tsp.digitize(eligibility, requestID: "replayed-1").digitalCardID == token.digitalCardID)
    }

    /// The wallet's token requestor id and token type reach the issuer with the digitization, as in VTS and MDES,
    /// for its decision; an id that is not 11 digits, or a type the enum does not name, is refused before anything
    /// is stored (the receipt stays good), without quoting what was sent in its place.
    @Test func theTokenRequestorAndTokenTypeReachTheIssuer() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        for bad in ["4001003027", "400100302730", "4001003027x", "4111 1111 1111 1111", "４００１００３０２７３"] {
            await expectRPCError(.invalidArgument, "token_requestor_id is not a token requestor id") {
                try await tsp.digitize(eligibility, tokenRequestorID: bad, tokenType: .secureElement)
            }
        }
        await expectRPCError(.invalidArgument, "token_type 9 is not a token type: give one of TOKEN_TYPE_UNSPECIFIED") {
            try await tsp.digitize(eligibility, tokenRequestorID: "40010030273", tokenType: .unrecognized(9))
        }
        #expect(tsp.issuer.state.withLock { $0.authorizations } == 0)
        let token = try await tsp.digitize(eligibility, tokenRequestorID: "40010030273", tokenType: .secureElement)
        #expect(token.decision == .approved)
        let seen = tsp.issuer.state.withLock { $0.tokenRequestors }
        #expect(seen.map(\.id) == ["40010030273"] && seen.map(\.type) == [.secureElement])
        // Both are optional: a wallet that gives neither is asked about as before.
        let plain = try TSPHarness.make()
        #expect(try await plain.digitize(try await plain.eligibleVisa()).decision == .approved)
        let plainSeen = plain.issuer.state.withLock { $0.tokenRequestors }
        #expect(plainSeen.map(\.id) == [""] && plainSeen.map(\.type) == [.unspecified])
    }

    /// An issuer that answers UNAVAILABLE itself (its disk refusing writes, say) was reached: the stand-in's reason
    /// says what it answered, where "the issuer could not be reached" sent its operator looking at the network.
    @Test func anIssuerAnsweringUnavailableIsNotSaidUnreachable() async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.unavailable)
        let response = try await tsp.digitize(try await tsp.eligibleVisa())
        #expect(response.decidedBy == "stand-in")
        let history = try await tsp.control.tokenHistory(.init(digitalCardID: response.digitalCardID))
        #expect(
            history.events.last?.reason.contains("the issuer answered that it is unavailable") == true,
            "\(history.events)")
    }

    /// An issuer that answers with an error refusing the question was reached: the stand-in, which stands in for an
    /// issuer that cannot be reached or is too slow, does not approve the card; it is declined with the issuer's
    /// words. (A TSP that asked the wrong issuer node got such an answer, and the stand-in approved the card.)
    @Test func anIssuerRefusalDeclinesWithoutTheStandIn() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        tsp.issuer.set(.refuse)
        // Asked about eligibility now, it refuses too: the TSP's own checks do not stand in for it.
        let refused = try await tsp.checkEligibility(pan: TSPHarness.visa)
        #expect(!refused.eligible)
        #expect(
            refused.reasonMessage.contains("the issuer refused the eligibility check (INVALID_ARGUMENT)"),
            "\(refused)")
        let response = try await tsp.digitize(eligibility, risk: TSPHarness.lowRisk)
        #expect(response.decision == .declined)
        #expect(response.decidedBy == "tsp")
        #expect(
            response.declineReason
                == "the issuer refused the request (INVALID_ARGUMENT): card data is not encrypted to the issuer's "
                + "registered key")
        #expect(
            tsp.logs.lines.contains {
                $0.contains("issuer refused the request; declining") && $0.contains("issuer_id=bank-a")
            },
            "\(tsp.logs.lines)")
        // The TSP's log says why the card was declined, not only that it was.
        #expect(
            tsp.logs.lines.contains {
                $0.contains(" digitized ") && $0.contains("decision=PROVISIONING_DECISION_DECLINED")
                    && $0.contains("decline_reason=\"the issuer refused the request (INVALID_ARGUMENT): card data")
            }, "\(tsp.logs.lines)")
        #expect(!tsp.logs.lines.contains { $0.contains("stand-in") })
    }

    /// A digitization whose call is cancelled while the issuer is asked (the wallet gave up, or the TSP's drain ran
    /// out at shutdown) decides nothing: the issuer's failed call is the cancellation, not an unavailable issuer, so
    /// the stand-in does not commit a decision the caller never heard. A retry with the same request id resumes it.
    @Test func aDigitizationCancelledBeforeTheDecisionStaysPending() async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.slow)
        let eligibility = try await tsp.eligibleVisa()
        let requestID = UUID().uuidString
        let call = Task { try await tsp.digitize(eligibility, requestID: requestID) }
        for _ in 0..<6_000 where tsp.issuer.state.withLock({ $0.authorizations }) == 0 {
            try await Task.sleep(for: .milliseconds(10))
        }
        call.cancel()
        _ = await call.result
        for _ in 0..<6_000 where !tsp.logs.lines.contains(where: { $0.contains("left pending") }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(!tsp.logs.lines.contains { $0.contains("stand-in") }, "\(tsp.logs.lines)")
        tsp.issuer.set(.approve)
        let retried = try await tsp.digitize(eligibility, requestID: requestID)
        #expect(retried.decision == .approved)
        #expect(retried.decidedBy == "issuer")
    }

    @Test func issuerAnswerWithoutDecisionGoesToStandIn() async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.unspecified)
        let response = try await tsp.digitize(try await tsp.eligibleVisa(), risk: nil)
        #expect(response.decision == .declined)
        #expect(response.decidedBy == "stand-in")
        // The issuer answered: the wallet is not told that it did not.
        #expect(
            response.declineReason
                == "the issuer's answer could not be used and the wallet sent no risk data (stand-in declined)")
        let token = try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens.first
        let history = try await tsp.control.tokenHistory(
            TspV1.TokenHistoryRequest(digitalCardID: try #require(token?.digitalCardID)))
        #expect(
            history.events.last?.reason.contains(
                "(the issuer answered without a decision (decision PROVISIONING_DECISION_UNSPECIFIED))") == true,
            "\(String(describing: history.events.last?.reason))")
    }

    /// A step-up without any ID&V method would leave the token INACTIVE with nothing the wallet can do: the stand-in
    /// decides, as for an answer without a decision. It used to be taken as it was.
    @Test func aStepUpWithoutMethodsGoesToStandIn() async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.stepUpWithoutMethods)
        let response = try await tsp.digitize(try await tsp.eligibleVisa(), risk: TSPHarness.lowRisk)
        #expect(response.decision == .approved)
        #expect(response.decidedBy == "stand-in")
        let history = try await tsp.control.tokenHistory(
            TspV1.TokenHistoryRequest(digitalCardID: response.digitalCardID))
        #expect(
            history.events.last?.reason.contains("the issuer asked for a step-up and offered no ID&V method") == true)
    }

    /// Methods the cardholder could not choose between (two with one id, one without an id or a type) make the
    /// step-up as unusable as one without methods: the wallet selects a method by its id, and with two named "x"
    /// the code went by the second whichever was meant.
    /// The history (and the TSP's log, and the stand-in's advice to the issuer) names the method and what is
    /// wrong with it.
    @Test(arguments: [
        (
            [
                CardV1.IdvMethod(id: "x", type: .otpSms, maskedValue: "***-***-1234"),
                CardV1.IdvMethod(id: "x", type: .otpEmail, maskedValue: "j***@example.com"),
            ], "its ID&V methods 1 and 2 share the id \"x\""
        ),
        ([CardV1.IdvMethod(id: "", type: .otpSms, maskedValue: "***-***-1234")], "its ID&V method 1 has no id"),
        (
            [
                CardV1.IdvMethod(id: "sms-1", type: .otpSms, maskedValue: "***-***-1234"),
                CardV1.IdvMethod(id: "sms-2", type: .unspecified, maskedValue: "***-***-1234"),
            ], "its ID&V method 2 has the type IDV_METHOD_TYPE_UNSPECIFIED, which no wallet can select"
        ),
        // A type from a newer protocol, which this TSP could not select either.
        (
            [CardV1.IdvMethod(id: "push-1", type: .unrecognized(7), maskedValue: "Bank A")],
            "its ID&V method 1 has the type 7, which no wallet can select"
        ),
    ])
    func aStepUpWithMethodsNoOneCanSelectGoesToStandIn(methods: [CardV1.IdvMethod], problem: String) async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.stepUpWith(methods))
        let response = try await tsp.digitize(try await tsp.eligibleVisa(), risk: TSPHarness.lowRisk)
        #expect(response.decidedBy == "stand-in")
        #expect(response.idvMethods.isEmpty)
        let history = try await tsp.control.tokenHistory(
            TspV1.TokenHistoryRequest(digitalCardID: response.digitalCardID))
        let reason = history.events.last?.reason ?? ""
        #expect(reason.contains(problem), "\(reason)")
    }

    /// A card number in an issuer's own words (a decline reason, a method's destination) is masked before the
    /// wallet, the history or a log has it, as in every text outside encrypted card data.
    @Test func cardNumbersInTheIssuersWordsAreMasked() async throws {
        let tsp = try TSPHarness.make()
        tsp.issuer.set(.decline("card \(TSPHarness.visa) blocked"))
        let declined = try await tsp.digitize(try await tsp.eligibleVisa())
        #expect(declined.declineReason == "card ************1111 blocked")
        let history = try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens.first
        let events = try await tsp.control.tokenHistory(
            TspV1.TokenHistoryRequest(digitalCardID: try #require(history?.digitalCardID))
        ).events
        #expect(events.last?.reason == "issuer declined: card ************1111 blocked")

        tsp.issuer.set(.stepUpWith([CardV1.IdvMethod(id: "mail", type: .otpEmail, maskedValue: TSPHarness.visa)]))
        let steppedUp = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.visa))
        #expect(steppedUp.idvMethods.map(\.maskedValue) == ["************1111"])
    }

    @Test func sameRequestIDGivesTheSameAnswerAndOneToken() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        let first = try await tsp.digitize(eligibility, requestID: "req-1")
        tsp.issuer.set(.decline("would decline now"))
        let second = try await tsp.digitize(eligibility, requestID: "req-1")
        #expect(first == second)
        #expect(tsp.issuer.state.withLock { $0.authorizations } == 1)
        await expectRPCError(.permissionDenied, "another wallet account") {
            try await tsp.digitize(eligibility, requestID: "req-1", account: "account-2")
        }
        #expect(try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens.count == 1)
        // The receipt was exchanged once: a new request id cannot make a second token from it.
        await expectRPCError(.failedPrecondition, "already exchanged") {
            try await tsp.digitize(eligibility, requestID: "req-2")
        }
    }

    /// A retry answers with the token as it is now: suspended after the first answer (which the wallet lost), it
    /// is SUSPENDED in the retry's answer, with the change's state version. Before, the stored ACTIVE came back and
    /// the wallet showed the token ACTIVE for good.
    @Test func aRetryAnswersWithTheTokensStateNow() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        let first = try await tsp.digitize(eligibility, requestID: "req-1")
        #expect(first.decision == .approved && first.tokenState == .active)
        let suspended = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1).changeTokenState(
            LifecycleTests.change(first.digitalCardID, .suspend))
        let retried = try await tsp.digitize(eligibility, requestID: "req-1")
        #expect(retried.decision == .approved && retried.digitalCardID == first.digitalCardID)
        #expect(retried.tokenState == .suspended)
        #expect(retried.stateVersion == suspended.stateVersion && retried.stateVersion > first.stateVersion)
    }

    @Test func concurrentRetriesMakeOneToken() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        let responses = try await withThrowingTaskGroup(of: TspV1.DigitizeResponse.self) { group in
            for _ in 0..<4 { group.addTask { try await tsp.digitize(eligibility, requestID: "req-same") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(responses.map(\.digitalCardID)).count == 1)
        #expect(try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens.count == 1)
    }

    @Test func requestIDReusedWithAnotherReceiptIsRefused() async throws {
        let tsp = try TSPHarness.make()
        _ = try await tsp.digitize(try await tsp.eligibleVisa(), requestID: "req-1")
        let other = try await tsp.checkEligibility(pan: TSPHarness.mastercard)
        await expectRPCError(.failedPrecondition, "another eligibility receipt") {
            try await tsp.digitize(other, requestID: "req-1")
        }
    }

    @Test func receiptChecksEachHaveTheirOwnError() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        var unknown = eligibility
        unknown.eligibilityReceipt = "no-such-receipt"
        await expectRPCError(.notFound, "unknown") { try await tsp.digitize(unknown) }
        await expectRPCError(.permissionDenied, "another wallet account") {
            try await tsp.digitize(eligibility, account: "account-2")
        }
        await expectRPCError(.permissionDenied, "another device") {
            try await tsp.digitize(eligibility, device: CardV1.DeviceInfo(deviceID: "device-2"))
        }
        await expectRPCError(.failedPrecondition, "terms and conditions") {
            try await tsp.digitize(eligibility, acceptTerms: false)
        }
        await expectRPCError(.invalidArgument, "request_id") { try await tsp.digitize(eligibility, requestID: "") }
        tsp.clock.advance(seconds: 10 * 60 + 1)
        await expectRPCError(.failedPrecondition, "expired") { try await tsp.digitize(eligibility) }
        #expect(try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens.isEmpty)
    }

    /// An eligibility receipt is the wallet node's that checked the card: every wallet node starts with the same
    /// account and device names, and another node spent the receipt (and replayed the first node's request id to
    /// be answered with its token) by naming them.
    @Test func aReceiptIsSpentOnlyByTheWalletNodeThatCheckedTheCard() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        let otherWallet = TspV1.Provisioning.Client(
            TSPHarness.connect(tsp.router, as: PeerIdentity(role: .wallet, nodeID: "wallet-2")))
        let request = TspV1.DigitizeRequest(
            requestID: "req-1", eligibilityReceipt: eligibility.eligibilityReceipt, device: TSPHarness.device,
            walletAccountID: TSPHarness.account, risk: TSPHarness.lowRisk)
        var accepted = request
        if case .termsAndConditions(let terms) = eligibility.terms {
            accepted.acceptedTermsID = terms.id
            accepted.termsAcceptedAtMs = tsp.clock.now.unixMilliseconds
        }
        await expectRPCError(.permissionDenied, "issued to another wallet node; check the card's eligibility") {
            try await otherWallet.digitize(accepted)
        }
        #expect(try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens.isEmpty)
        // The receipt stays for its own node, and a replay of that node's request from the other is refused too.
        let made = try await tsp.digitize(eligibility, requestID: "req-1")
        #expect(made.decision == .approved)
        await expectRPCError(.permissionDenied, "issued to another wallet node") {
            try await otherWallet.digitize(accepted)
        }
        #expect(try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens.map(\.walletNodeID) == ["wallet-1"])
    }

    /// Request ids are each wallet node's own: a second node that numbers its requests as the first does gets its
    /// own token for its own card, and each node's retry is answered with its own token.
    @Test func twoWalletNodesMayUseTheSameRequestID() async throws {
        let tsp = try TSPHarness.make()
        let visa = try await tsp.eligibleVisa()
        let first = try await tsp.digitize(visa, requestID: "req-1")
        let otherWallet = TspV1.Provisioning.Client(
            TSPHarness.connect(tsp.router, as: PeerIdentity(role: .wallet, nodeID: "wallet-2")))
        let eligibility = try await otherWallet.checkEligibility(
            TspV1.CheckEligibilityRequest(
                requestID: "check-1", eligibilityData: TspV1.EligibilityData(language: "en-US", inputMethod: .manual),
                walletAccountID: TSPHarness.account, device: TSPHarness.device,
                instrument: .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.mastercard)))))
        try #require(eligibility.eligible)
        var request = TspV1.DigitizeRequest(
            requestID: "req-1", eligibilityReceipt: eligibility.eligibilityReceipt, device: TSPHarness.device,
            walletAccountID: TSPHarness.account, risk: TSPHarness.lowRisk)
        if case .termsAndConditions(let terms) = eligibility.terms {
            request.acceptedTermsID = terms.id
            request.termsAcceptedAtMs = tsp.clock.now.unixMilliseconds
        }
        let second = try await otherWallet.digitize(request)
        #expect(second.decision == .approved)
        #expect(second.panLast4 == "4444")
        #expect(second.digitalCardID != first.digitalCardID)
        // Each node's retry gets its own answer.
        #expect(try await otherWallet.digitize(request).digitalCardID == second.digitalCardID)
        #expect(try await tsp.digitize(visa, requestID: "req-1").digitalCardID == first.digitalCardID)
        let tokens = try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens
        #expect(Set(tokens.map(\.walletNodeID)) == ["wallet-1", "wallet-2"])
    }

    @Test func unknownTokenHistoryIsNotFound() async throws {
        let tsp = try TSPHarness.make()
        await expectRPCError(.notFound, "DNITHE0") {
            try await tsp.control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: "DNITHE0"))
        }
    }

    @Test func logsNeverHoldACardNumber() async throws {
        let tsp = try TSPHarness.make()
        _ = try await tsp.digitize(try await tsp.eligibleVisa())
        _ = try await tsp.checkEligibility(pan: "4111111111111112")
        tsp.issuer.set(.unavailable)
        _ = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        let lines = tsp.logs.lines
        #expect(lines.count >= 4)
        for pan in [TSPHarness.visa, "4111111111111112", TSPHarness.mastercard] {
            #expect(!lines.contains { $0.contains(pan) })
        }
    }
}
