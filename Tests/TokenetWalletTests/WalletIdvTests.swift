import Testing
import TokenetRPC
import TokenetWire

@testable import TokenetWallet

/// The wallet's ID&V calls in memory: forwarded to the TSP with the card's digital card id, the card's token
/// state kept from the TSP's answer.
@Suite struct WalletIdvTests {
    static let digitalCardID = "DNITHE000000000000000054"

    static func steppedUp() async throws -> WalletHarness {
        let wallet = try WalletHarness()
        wallet.tsp.configure {
            $0.digitize = TspV1.DigitizeResponse(
                decision: .requireAdditionalAuthentication, digitalCardID: digitalCardID, tokenState: .inactive,
                tokenLast4: "3456", scheme: .visa, panLast4: "0054",
                idvMethods: [CardV1.IdvMethod(id: "otp-sms", type: .otpSms, maskedValue: "***-***-1234")])
        }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        return wallet
    }

    @Test func selectThenWrongThenRightCodeActivatesTheCard() async throws {
        let wallet = try await Self.steppedUp()
        let selected = try await wallet.idv.selectIdvMethod(.init(cardRef: "card-1", methodID: "otp-sms"))
        #expect(selected.codeSent && selected.triesLeft == 3 && selected.instructions.contains("***-***-1234"))
        #expect(wallet.idvTSP.recorded.selects.map(\.digitalCardID) == [Self.digitalCardID])
        #expect(wallet.idvTSP.recorded.selects.map(\.methodID) == ["otp-sms"])

        let wrong = try await wallet.idv.submitOTP(.init(cardRef: "card-1", code: "000000"))
        #expect(wrong.result == .incorrectCode && wrong.triesLeft == 2 && wrong.card?.state == .inactive)
        let right = try await wallet.idv.submitOTP(.init(cardRef: "card-1", code: "123456"))
        #expect(right.result == .success && right.card?.state == .active)
        #expect(try await wallet.control.listCards(.init()).cards.map(\.state) == [.active])
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .active)
        #expect(!wallet.logs.lines.contains { $0.contains("123456") })
    }

    /// accept-terms repeated once the step-up was done answers with the decision, but offers its ID&V methods no
    /// more: the token is ACTIVE (or deleted), and every method would fail. While it waits, they are offered.
    @Test func aRepeatedAcceptTermsOffersTheMethodsOnlyWhileTheTokenWaitsForThem() async throws {
        let wallet = try await Self.steppedUp()
        let waiting = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(waiting.decision == .requireAdditionalAuthentication && waiting.idvMethods.map(\.id) == ["otp-sms"])
        _ = try await wallet.idv.selectIdvMethod(.init(cardRef: "card-1", methodID: "otp-sms"))
        _ = try await wallet.idv.submitOTP(.init(cardRef: "card-1", code: "123456"))
        let activated = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(activated.decision == .requireAdditionalAuthentication && activated.card?.state == .active)
        #expect(activated.idvMethods.isEmpty)
    }

    /// The TSP's CARD_STATE about the activation can arrive before its answer to the right code: the issuer app's
    /// listeners hear the card become ACTIVE once.
    @Test func anActivationWhoseCardStateArrivesBeforeTheAnswerIsAnnouncedOnce() async throws {
        let wallet = try await Self.steppedUp()
        var events = wallet.events.subscribe().events.makeAsyncIterator()
        let handler = wallet.notifications
        wallet.idvTSP.state.withLock {
            $0.whileSubmitting = { answer in
                var message = WalletLifecycleTests.cardState(answer.tokenState)
                message.cardID = Self.digitalCardID
                try await handler.handle(message)
            }
        }
        _ = try await wallet.idv.selectIdvMethod(.init(cardRef: "card-1", methodID: "otp-sms"))
        let right = try await wallet.idv.submitOTP(.init(cardRef: "card-1", code: "123456"))
        #expect(right.result == .success && right.card?.state == .active)
        _ = wallet.events.publish(WalletEventHubTests.event("marker"))
        let changed = await events.next()
        #expect(changed?.kind == .tokenStatusChanged && changed?.tokenState == .active)
        let next = await events.next()
        #expect(next?.digitalCardID == "marker", "announced twice: \(String(describing: next))")
    }

    /// A code whose answer was lost may have been taken: the error says to submit it again, and what an ACTIVE
    /// answer then means.
    @Test func aSubmitWhoseAnswerWasLostSaysToSubmitAgain() async throws {
        let wallet = try await Self.steppedUp()
        wallet.idvTSP.state.withLock {
            $0.whileSubmitting = { _ in throw RPCError(.unavailable, "connection lost") }
        }
        await expectRPCError(
            .unavailable,
            "the TSP's SubmitOtp failed: connection lost; the TSP may have taken the code: submit it again"
        ) { try await wallet.idv.submitOTP(.init(cardRef: "card-1", code: "123456")) }
    }

    /// A request for a code whose answer was lost may have had the code sent: the error says to submit the code
    /// that arrives before asking again. The TSP's own answers say what to do themselves, and are left as they are.
    @Test func aCodeRequestWhoseAnswerWasLostSaysACodeMayArrive() async throws {
        let wallet = try await Self.steppedUp()
        wallet.idvTSP.state.withLock { $0.codeRequestFailure = RPCError(.unavailable, "connection lost: read failed") }
        await expectRPCError(
            .unavailable,
            "the TSP's ResendOtp failed: connection lost: read failed; the TSP may have sent a code all the same: "
                + "submit the code that arrives, and if none does, run resend-otp card-1 again"
        ) { try await wallet.idv.resendOTP(.init(cardRef: "card-1")) }
        await expectRPCError(
            .unavailable,
            "connection lost: read failed; the TSP may have sent a code all the same: submit the code "
                + "that arrives, and if none does, select the method again"
        ) { try await wallet.idv.selectIdvMethod(.init(cardRef: "card-1", methodID: "otp-sms")) }
        // A method that sends no code (one the card does not offer as a code method) gets no such advice.
        do {
            _ = try await wallet.idv.selectIdvMethod(.init(cardRef: "card-1", methodID: "call-centre"))
            Issue.record("the selection succeeded")
        } catch let error as RPCError {
            #expect(error.message == "the TSP's SelectIdvMethod failed: connection lost: read failed")
        }
        let answered = "the issuer could not deliver the code (UNAVAILABLE); select the method again"
        wallet.idvTSP.state.withLock { $0.codeRequestFailure = RPCError(.unavailable, answered) }
        do {
            _ = try await wallet.idv.resendOTP(.init(cardRef: "card-1"))
            Issue.record("the resend succeeded")
        } catch let error as RPCError {
            #expect(error.message == "the TSP's ResendOtp failed: " + answered)
        }
    }

    /// A refusal that names one of the wallet's tokens names its card too: the person works with card references.
    @Test func aTokenTheTSPNamesIsShownWithItsCard() async throws {
        let wallet = try await Self.steppedUp()
        wallet.idvTSP.state.withLock {
            $0.whileSubmitting = { _ in
                throw RPCError(
                    .failedPrecondition,
                    "token \"X\" is DEACTIVATED (replaced); verify token \"\(Self.digitalCardID)\" instead")
            }
        }
        await expectRPCError(
            .failedPrecondition,
            "the TSP's SubmitOtp failed: token \"X\" is DEACTIVATED (replaced); verify token \"\(Self.digitalCardID)\" "
                + "(card-1) instead"
        ) { try await wallet.idv.submitOTP(.init(cardRef: "card-1", code: "000000")) }
    }

    @Test func resendPassesTheTSPsRefusalThrough() async throws {
        let wallet = try await Self.steppedUp()
        let resent = try await wallet.idv.resendOTP(.init(cardRef: "card-1"))
        #expect(resent.codeExpiresAtMs == 700_000 && resent.card?.cardRef == "card-1")
        #expect(resent.method?.maskedValue == "***-***-1234" && resent.method?.id == "otp-sms")
        do {
            _ = try await wallet.idv.resendOTP(.init(cardRef: "card-1"))
            Issue.record("the second resend should fail")
        } catch let error as RPCError {
            #expect(error.code == .failedPrecondition)
            #expect(error.message == "the TSP's ResendOtp failed: no more codes can be sent for this token")
        }
    }

    @Test func cardsWithoutADigitalCardAndBadInputAreRefused() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        #expect(
            await statusCode { try await wallet.idv.selectIdvMethod(.init(cardRef: "card-1", methodID: "otp-sms")) }
                == .failedPrecondition)
        #expect(await statusCode { try await wallet.idv.submitOTP(.init(cardRef: "card-9", code: "1")) } == .notFound)
        #expect(await statusCode { try await wallet.idv.resendOTP(.init(cardRef: "nope")) } == .invalidArgument)
        let steppedUp = try await Self.steppedUp()
        #expect(
            await statusCode { try await steppedUp.idv.submitOTP(.init(cardRef: "card-1", code: "")) }
                == .invalidArgument)
        #expect(
            await statusCode { try await steppedUp.idv.selectIdvMethod(.init(cardRef: "card-1", methodID: "")) }
                == .invalidArgument)
        #expect(steppedUp.idvTSP.recorded.submits.isEmpty && steppedUp.idvTSP.recorded.selects.isEmpty)
    }
}
