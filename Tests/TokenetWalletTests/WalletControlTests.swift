import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetWire

@testable import TokenetWallet

/// AddCard, AcceptTerms and ListCards against a fake TSP, over the in-memory transport.
@Suite struct WalletControlTests {
    @Test func manualCardIsEncryptedToTheTSPsCurrentKeyAndChecked() async throws {
        let wallet = try WalletHarness()
        let added = try await wallet.control.addCard(WalletHarness.manual(language: "es"))
        #expect(added.eligible && added.cardRef == "card-1")
        #expect(added.terms?.id == "tc-visa-1" && added.scheme == .visa && added.panLast4 == "1111")

        let request = try #require(wallet.tsp.recorded.eligibilityRequests.first)
        let (kid, card) = try wallet.tsp.decrypt(request)
        #expect(kid == wallet.tsp.keyring.currentKid)
        #expect(card.accountNumber == "4111111111111111" && card.cvv2 == "123" && card.name == "Ana Díaz")
        #expect(card.expirationDate == CardData.ExpirationDate(month: "12", year: "2030"))
        #expect(request.eligibilityData == TspV1.EligibilityData(language: "es", inputMethod: .manual))
        #expect(request.walletAccountID == WalletConfiguration.defaultAccountID)
        #expect(request.device == WalletConfiguration().device)
        #expect(!request.requestID.isEmpty)

        let listed = try await wallet.control.listCards(.init()).cards
        #expect(listed.map(\.status) == ["PENDING_TERMS"] && listed.map(\.cardRef) == ["card-1"])
        // Only digitization names the card's issuer.
        #expect(listed.map(\.issuerID) == [""])
    }

    /// A TSP that does not answer add-card's calls leaves no card behind, and the error says so: "cannot connect to
    /// the tsp-node …" said nothing of the card, where accept-terms says what to do.
    @Test func aTSPThatDoesNotAnswerAddCardLeavesNothingAdded() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.state.withLock { $0.eligibilityFailure = RPCError(.unavailable, "connection lost: read failed") }
        await expectRPCError(
            .unavailable,
            "the TSP's CheckEligibility failed: connection lost: read failed; nothing was added to the wallet: add the "
                + "card again once the TSP answers"
        ) { try await wallet.control.addCard(WalletHarness.manual()) }
        #expect(try wallet.store.allCards().isEmpty)
        // A push session's eligible answer spends it: one whose answer was lost may be used up.
        await expectRPCError(
            .unavailable,
            "nothing was added to the wallet: add the card again once the TSP answers; the TSP may have used up the "
                + "push session meanwhile: if it is refused as used, have the issuer push the card again"
        ) { try await wallet.control.addCard(WalletV1.AddCardRequest(source: .pushSessionID("ps-1"))) }
        #expect(try wallet.store.allCards().isEmpty)
        wallet.tsp.state.withLock { $0.eligibilityFailure = RPCError(.invalidArgument, "the expiry date has passed") }
        await expectRPCError(.invalidArgument, "CheckEligibility failed: the expiry date has passed") {
            try await wallet.control.addCard(WalletHarness.manual())
        }
    }

    /// A Digitize answer whose token state is no state a token can be in is not recorded: the card showed state
    /// "?" for good. The request stays, and asking again records the usable answer the TSP gives then.
    @Test func aDigitizeAnswerWithAStateNoTokenCanBeInIsNotRecorded() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        wallet.tsp.state.withLock { $0.digitize.tokenState = .unrecognized(42) }
        await expectRPCError(
            .internal,
            "the TSP's answer to the digitization is not usable: the TSP gave card-1's token state number 42, which "
                + "is not a state this wallet knows"
        ) { _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1")) }
        #expect(try wallet.store.card(ref: "card-1").result == nil)
        wallet.tsp.state.withLock { $0.digitize.tokenState = .active }
        let accepted = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(accepted.card?.state == .active)
        let requests = wallet.tsp.recorded.digitizeRequests
        #expect(requests.count == 2 && requests[0].requestID == requests[1].requestID)
    }

    /// Calls to the TSP outside a served call (the Digitize requests sent again after each subscription) have a
    /// deadline: a TSP that took one and never answered held the wallet's catch-up for good.
    @Test func theWalletsOwnCallsToTheTSPHaveADeadline() {
        #expect(TSPCalls.options.timeout == TSPCalls.backgroundWait)
        #expect(TSPCalls.backgroundWait > .zero)
    }

    @Test func acceptTermsDigitizesWithTheAcceptedTermsDeviceAndRisk() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        let accepted = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(accepted.decision == .approved && accepted.decidedBy == "issuer")
        #expect(
            accepted.card
                == WalletV1.WalletCard(
                    cardRef: "card-1", digitalCardID: "DNITHE000000000000000001", scheme: .visa, panLast4: "1111",
                    tokenLast4: "9012", state: .active, status: "DIGITIZED",
                    walletAccountID: WalletConfiguration.defaultAccountID, issuerID: "bank-a"))

        let digitize = try #require(wallet.tsp.recorded.digitizeRequests.first)
        #expect(digitize.eligibilityReceipt == "receipt-1" && digitize.acceptedTermsID == "tc-visa-1")
        #expect(digitize.termsAcceptedAtMs == 1_000_000)
        #expect(digitize.risk == CardV1.WalletRiskData(accountScore: 1, deviceScore: 1, recommendation: .approve))
        #expect(digitize.walletAccountID == WalletConfiguration.defaultAccountID)
        #expect(digitize.device == WalletConfiguration().device)
        // Google Pay, the default provider, at Visa; its tokens live in the app (HCE).
        #expect(digitize.tokenRequestorID == "40010075001" && digitize.tokenType == .hce)
        #expect(try await wallet.control.listCards(.init()).cards == [accepted.card!])
    }

    /// The token requestor id is the one the card's scheme gave the wallet's provider, and Apple Pay's tokens live
    /// in the device's secure element.
    @Test func eachProviderNamesItsTokenRequestorIdForTheCardsScheme() async throws {
        var configuration = WalletConfiguration()
        configuration.provider = .applePay
        let wallet = try WalletHarness(configuration: configuration)
        wallet.tsp.configure { $0.eligibility.scheme = .mastercard }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        let digitize = try #require(wallet.tsp.recorded.digitizeRequests.first)
        #expect(digitize.tokenRequestorID == "50110030273" && digitize.tokenType == .secureElement)
        let ids = WalletProvider.allCases.flatMap { provider in
            [CardV1.CardScheme.visa, .mastercard].map { provider.tokenRequestorID(for: $0) }
        }
        #expect(Set(ids).count == 6 && ids.allSatisfy { $0.count == 11 && $0.allSatisfy { ("0"..."9").contains($0) } })
        #expect(WalletProvider.allCases.allSatisfy { $0.tokenRequestorID(for: .unspecified).isEmpty })
        #expect(WalletProvider.googlePay.visaTokenRequestorID == "40010075001")
        #expect(WalletProvider.applePay.visaTokenRequestorID == nil)
    }

    @Test func aRetryAfterAFailedDigitizeSendsTheSameRequestID() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.configure { $0.digitizeFailures = 1 }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        #expect(await statusCode { try await wallet.control.acceptTerms(.init(cardRef: "card-1")) } == .unavailable)
        let first = try #require(wallet.tsp.recorded.digitizeRequests.first)
        // The key was committed before the call, so it survives the failure (and a restart).
        #expect(try wallet.store.card(ref: "card-1").digitizeRequestID == first.requestID)
        #expect(try wallet.store.card(ref: "card-1").status == .pendingTerms)

        let accepted = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(accepted.card?.status == "DIGITIZED")
        let requests = wallet.tsp.recorded.digitizeRequests
        #expect(requests.count == 2 && requests[1] == first)
    }

    @Test func acceptingAgainAnswersFromTheWalletWithoutASecondDigitize() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        let first = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        let second = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(first == second)
        #expect(wallet.tsp.recorded.digitizeRequests.count == 1)
    }

    /// A declined card has no token, so it shows no token state: the TSP's DEACTIVATED for the declined request
    /// showed in `wallet cards` as if a token had been made and then ended.
    @Test func aDeclinedCardIsKeptAsDeclinedWithTheReason() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.configure {
            $0.digitize = TspV1.DigitizeResponse(
                decision: .declined, tokenState: .deactivated, scheme: .visa, panLast4: "1111",
                declineReason: "card reported stolen", decidedBy: "issuer")
        }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        let accepted = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(accepted.decision == .declined && accepted.declineReason == "card reported stolen")
        #expect(accepted.card?.status == "DECLINED" && accepted.card?.digitalCardID == "")
        #expect(accepted.card?.state == .unspecified)
        #expect(try await wallet.control.listCards(.init()).cards.map(\.state) == [.unspecified])
        // The reason stays with the card: accept-terms printed it once, and `cards` never again.
        #expect(try await wallet.control.listCards(.init()).cards.map(\.reason) == ["card reported stolen"])
    }

    @Test func aStepUpLeavesTheTokenInactiveWithTheIDVMethods() async throws {
        let wallet = try WalletHarness()
        let methods = [CardV1.IdvMethod(id: "otp-1", type: .otpSms, maskedValue: "***-***-1234")]
        wallet.tsp.configure {
            $0.digitize = TspV1.DigitizeResponse(
                decision: .requireAdditionalAuthentication, digitalCardID: "DWSPMC000000000000000002",
                tokenState: .inactive, tokenLast4: "3456", scheme: .mastercard, panLast4: "4444", idvMethods: methods)
        }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        let accepted = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(accepted.decision == .requireAdditionalAuthentication && accepted.idvMethods == methods)
        #expect(accepted.card?.state == .inactive && accepted.card?.status == "DIGITIZED")
    }

    @Test func anIneligibleCardIsReportedAndNotKept() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.configure {
            $0.eligibility = TspV1.CheckEligibilityResponse(
                eligible: false, reason: .cardExpired, reasonMessage: "the card expired at the end of 01/20",
                scheme: .visa, panLast4: "1111")
        }
        let added = try await wallet.control.addCard(WalletHarness.manual(expiry: "01/20"))
        #expect(!added.eligible && added.cardRef.isEmpty && added.reason == "the card expired at the end of 01/20")
        #expect(try await wallet.control.listCards(.init()).cards.isEmpty)
    }

    @Test func malformedCardInputIsRefusedBeforeAnythingIsSent() async throws {
        let wallet = try WalletHarness()
        for request in [
            WalletHarness.manual("4111 1111 1111 111O"), WalletHarness.manual("4111/1111/1111/1111"),
            WalletHarness.manual(" - "), WalletHarness.manual("4111"),
            WalletHarness.manual(expiry: "2030-12"), WalletHarness.manual(expiry: "13/30"),
            WalletHarness.manual(cvc: "12a"), WalletHarness.manual(""), WalletV1.AddCardRequest(),
            WalletV1.AddCardRequest(source: .pushSessionID("")),
            WalletV1.AddCardRequest(source: .pushReceipt(.init(scheme: .mastercard, payload: ""))),
        ] {
            #expect(await statusCode { try await wallet.control.addCard(request) } == .invalidArgument)
        }
        #expect(wallet.tsp.recorded.eligibilityRequests.isEmpty && wallet.tsp.recorded.keyRequests == 0)
    }

    /// A language that is no BCP-47 tag was sent on and answered in English without a word; a well-formed tag
    /// (with a region, a script, or as POSIX writes it) goes to the TSP, which falls back to English itself.
    @Test func aLanguageThatIsNoLanguageTagIsRefused() async throws {
        let wallet = try WalletHarness()
        for language in ["12", "e", "es-", "español", "es ES", "en-US-" + String(repeating: "x", count: 40)] {
            var request = WalletHarness.manual()
            request.language = language
            let refused = await #expect(throws: RPCError.self) { try await wallet.control.addCard(request) }
            #expect(refused?.code == .invalidArgument, "\(language)")
            #expect(refused?.message.contains("is not a BCP-47 language tag; give one such as es or es-ES") == true)
        }
        #expect(wallet.tsp.recorded.eligibilityRequests.isEmpty)
        for language in ["es", "es-ES", "zh-Hant-TW", "pt_BR", "fil", "de-CH-1996"] {
            var request = WalletHarness.manual()
            request.language = language
            #expect(try await wallet.control.addCard(request).eligible, "\(language)")
        }
        let sent = wallet.tsp.recorded.eligibilityRequests.map { $0.eligibilityData?.language }
        #expect(sent == ["es", "es-ES", "zh-Hant-TW", "pt_BR", "fil", "de-CH-1996"])
    }

    /// An input method no one declared was stored with the TSP's receipt and passed to the issuer as a number.
    @Test func anInputMethodThatIsNoneIsRefused() async throws {
        let wallet = try WalletHarness()
        var request = WalletHarness.manual()
        if case .manual(var card)? = request.source {
            card.inputMethod = .init(rawValue: 999)
            request.source = .manual(card)
        }
        let refused = await #expect(throws: RPCError.self) { try await wallet.control.addCard(request) }
        #expect(refused?.code == .invalidArgument)
        #expect(refused?.message.hasPrefix("input_method 999 is not an input method: give one of ") == true)
        #expect(wallet.tsp.recorded.eligibilityRequests.isEmpty)
    }

    /// As printed on the card, in groups: a card form takes the spaces or hyphens, and only the digits travel on.
    @Test func aNumberTypedInGroupsIsSentAsDigits() async throws {
        let wallet = try WalletHarness()
        for typed in ["4111 1111 1111 1111", "4111-1111-1111-1111", " 4111  1111 1111 1111 "] {
            #expect(try await wallet.control.addCard(WalletHarness.manual(typed)).panLast4 == "1111")
        }
        let sent = try wallet.tsp.recorded.eligibilityRequests.map { try wallet.tsp.decrypt($0).1.accountNumber }
        #expect(sent == Array(repeating: "4111111111111111", count: 3))
        let refused = await #expect(throws: RPCError.self) {
            try await wallet.control.addCard(WalletHarness.manual("4111 1111 1111 111O"))
        }
        #expect(refused?.code == .invalidArgument)
        #expect(
            refused?.message
                == "the card number may hold only the digits 0-9, with spaces or one hyphen between groups")
    }

    @Test func aWrongCheckDigitIsLeftToTheTSPsEligibilityAnswer() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual("4111111111111112"))
        #expect(wallet.tsp.recorded.eligibilityRequests.count == 1)
    }

    @Test func pushReceiptsAndSessionsAreCheckedAsTheyCame() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(
            .init(source: .pushReceipt(.init(scheme: .mastercard, payload: "rcpt-abc"))))
        _ = try await wallet.control.addCard(.init(source: .pushSessionID("ps-9")))
        let requests = wallet.tsp.recorded.eligibilityRequests
        #expect(
            requests.map(\.instrument) == [
                .issuerPushReceipt(.init(scheme: .mastercard, payload: "rcpt-abc")), .pushSessionID("ps-9"),
            ])
        #expect(requests.allSatisfy { $0.eligibilityData?.inputMethod == .bankApp })
        #expect(try wallet.store.allCards().map(\.source) == [.pushReceipt, .pushSession])
        #expect(wallet.tsp.recorded.keyRequests == 0)
    }

    /// A caller that goes while the TSP checks a push session (a killed CLI) leaves the card stored: the TSP spends
    /// the session with its eligible answer, and cancelled with the call, the wallet never stored the card.
    @Test func aCallerThatGoesDuringAPushedAddLeavesTheCardStored() async throws {
        let wallet = try WalletHarness()
        let gate = FakeTSPGate()
        wallet.tsp.state.withLock { $0.eligibilityHold = gate.hold }
        let adding = Task { try await wallet.control.addCard(.init(source: .pushSessionID("ps-9"))) }
        for await _ in gate.entered { break }
        adding.cancel()
        await #expect(throws: (any Error).self) { try await adding.value }
        gate.open.yield()
        var sources: [WalletCardSource] = []
        for _ in 0..<200 {
            sources = try wallet.store.allCards().map(\.source)
            if !sources.isEmpty { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(sources == [.pushSession])
    }

    /// A pushed card whose eligibility expired before its T&C were accepted cannot be added again from what pushed
    /// it (the eligibility check spent it): the message says to have the issuer push it again, not to add it again.
    @Test func anExpiredPushedCardSaysToHaveItPushedAgain() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.state.withLock { $0.eligibility.receiptExpiresAtMs = 5 }
        let receipt = try await wallet.control.addCard(
            .init(source: .pushReceipt(.init(scheme: .mastercard, payload: "rcpt-abc"))))
        let session = try await wallet.control.addCard(.init(source: .pushSessionID("ps-9")))
        let manual = try await wallet.control.addCard(WalletHarness.manual("4111111111111111"))
        // Listed as such, not as PENDING_TERMS, which read as if accept-terms would still work.
        #expect(
            try await wallet.control.listCards(.init()).cards.map(\.status)
                == Array(repeating: "TERMS_EXPIRED", count: 3))
        for (card, again) in [
            (receipt, "have the issuer push the card again (a new push receipt)"),
            (session, "have the issuer push the card again (a new push session)"), (manual, "add the card again"),
        ] {
            let ref = card.cardRef
            await expectRPCError(.failedPrecondition, "expired before its T&C were accepted; \(again)") {
                try await wallet.control.acceptTerms(.init(cardRef: ref))
            }
        }
        // A command that needs the token says what `cards` lists, and what to do: it said PENDING_TERMS and to
        // accept the T&C, which then failed.
        let pushed = receipt.cardRef
        await expectRPCError(
            .failedPrecondition,
            "has no digital card (status TERMS_EXPIRED); its eligibility expired before its T&C were accepted: have "
                + "the issuer push the card again (a new push receipt)"
        ) {
            try await wallet.lifecycle.changeCardState(
                .init(cardRef: pushed, action: .suspend, reasonCode: "USER_REQUEST"))
        }
        // Removed as it was listed: the answer said PENDING_TERMS.
        let removed = try await wallet.lifecycle.changeCardState(
            .init(cardRef: manual.cardRef, action: .delete, reasonCode: "USER_REQUEST"))
        #expect(removed.removed && removed.card?.status == "TERMS_EXPIRED")
    }

    @Test func unknownAndMalformedCardReferences() async throws {
        let wallet = try WalletHarness()
        #expect(await statusCode { try await wallet.control.acceptTerms(.init(cardRef: "card-7")) } == .notFound)
        #expect(await statusCode { try await wallet.control.acceptTerms(.init(cardRef: "7")) } == .invalidArgument)
    }

    @Test func anExpiredEligibilityReceiptAsksToAddTheCardAgain() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.configure { $0.eligibility.receiptExpiresAtMs = 999_999 }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        #expect(
            await statusCode { try await wallet.control.acceptTerms(.init(cardRef: "card-1")) } == .failedPrecondition)
        #expect(wallet.tsp.recorded.digitizeRequests.isEmpty)
    }

    @Test func theCardNumberNeverReachesTheLogs() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(!wallet.logs.lines.isEmpty)
        #expect(!wallet.logs.lines.contains { $0.contains("4111111111111111") || $0.contains("411111") })
    }

    @Test func configuredRiskAccountAndDeviceAreSent() async throws {
        var configuration = WalletConfiguration()
        configuration.walletAccountID = "acct-7"
        configuration.device.deviceID = "watch-1"
        configuration.risk = CardV1.WalletRiskData(accountScore: 4, deviceScore: 5, recommendation: .decline)
        let wallet = try WalletHarness(configuration: configuration)
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        let digitize = try #require(wallet.tsp.recorded.digitizeRequests.first)
        #expect(digitize.risk == configuration.risk && digitize.walletAccountID == "acct-7")
        #expect(digitize.device?.deviceID == "watch-1")
        #expect(wallet.tsp.recorded.eligibilityRequests.first?.walletAccountID == "acct-7")
    }
}
