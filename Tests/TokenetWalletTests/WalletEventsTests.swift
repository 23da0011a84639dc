import Testing
import TokenetRPC
import TokenetWire

@testable import TokenetWallet

/// The wallet emits its state changes to the issuer app's listeners and answers the app's pull of token states.
@Suite struct WalletEventsTests {
    @Test func digitizingACardEmitsTokenizedCardAdded() async throws {
        let wallet = try WalletHarness()
        let listener = wallet.events.subscribe()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        // Accepting again answers from storage and emits nothing more.
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        var iterator = listener.events.makeAsyncIterator()
        let added = await iterator.next()
        #expect(added?.kind == .tokenizedCardAdded && added?.sequence == 1)
        #expect(added?.digitalCardID == "DNITHE000000000000000001" && added?.tokenState == .active)
        #expect(added?.walletAccountID == WalletConfiguration.defaultAccountID && added?.atMs == 1_000_000)
        #expect(wallet.events.publish(WalletEventHubTests.event("next")) == 2)
    }

    @Test func aDeclinedCardEmitsNothing() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.configure {
            $0.digitize = TspV1.DigitizeResponse(decision: .declined, declineReason: "issuer said no")
        }
        let listener = wallet.events.subscribe()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        wallet.events.publish(WalletEventHubTests.event("marker"))
        var iterator = listener.events.makeAsyncIterator()
        #expect(await iterator.next()?.digitalCardID == "marker")
    }

    @Test func aSuccessfulCodeEmitsTokenStatusChangedAndAWrongOneDoesNot() async throws {
        let wallet = try await WalletIdvTests.steppedUp()
        let listener = wallet.events.subscribe()
        _ = try await wallet.idv.submitOTP(.init(cardRef: "card-1", code: "000000"))
        _ = try await wallet.idv.submitOTP(.init(cardRef: "card-1", code: "123456"))
        var iterator = listener.events.makeAsyncIterator()
        let changed = await iterator.next()
        // The listener opened after the card was added: the change is the first event it hears.
        #expect(changed?.kind == .tokenStatusChanged && changed?.sequence == 1)
        #expect(changed?.digitalCardID == WalletIdvTests.digitalCardID && changed?.tokenState == .active)
    }

    @Test func currentTokensListsTheDigitalCardsStates() async throws {
        let wallet = try await WalletIdvTests.steppedUp()
        _ = try await wallet.control.addCard(WalletHarness.manual("5555555555554444"))
        let before = try await wallet.issuerApp.currentTokens(.init())
        #expect(before.walletAccountID == WalletConfiguration.defaultAccountID)
        #expect(before.tokens.map(\.digitalCardID) == [WalletIdvTests.digitalCardID])
        #expect(before.tokens.map(\.tokenState) == [.inactive])
        _ = try await wallet.idv.submitOTP(.init(cardRef: "card-1", code: "123456"))
        #expect(try await wallet.issuerApp.currentTokens(.init()).tokens.map(\.tokenState) == [.active])
    }

    @Test func listenStreamsEventsToTheIssuerApp() async throws {
        let wallet = try WalletHarness()
        let stream = try await wallet.issuerApp.listen(.init())
        var iterator = stream.makeAsyncIterator()
        // The handler subscribes once the call reaches the wallet; wait for it so no event is published before.
        while wallet.events.listenerCount == 0 { await Task.yield() }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        let added = try await iterator.next()
        #expect(added?.kind == .tokenizedCardAdded && added?.digitalCardID == "DNITHE000000000000000001")
        stream.cancel()
    }

    /// Two banks' cards in one wallet: each bank's issuer app (node issuer-1 for bank-a, issuer-2 for bank-b, as the
    /// TSP named them at digitization) lists and hears about its own card only, and cannot answer for the other's.
    @Test func eachIssuerAppSeesOnlyItsOwnIssuersCards() async throws {
        let wallet = try WalletHarness()
        let bankB = wallet.asIssuer("issuer-2")
        let streamA = try await wallet.issuerApp.listen(.init())
        let streamB = try await WalletV1.WalletEvents.Client(bankB).listen(.init())
        while wallet.events.listenerCount < 2 { await Task.yield() }

        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        let bankBCard = "DMC1MC000000000000000002"
        wallet.tsp.configure {
            $0.eligibility.scheme = .mastercard
            $0.eligibility.panLast4 = "4444"
            $0.digitize = TspV1.DigitizeResponse(
                decision: .approved, digitalCardID: bankBCard, tokenState: .active, tokenLast4: "7777",
                tokenExpiry: "12/29", scheme: .mastercard, panLast4: "4444", decidedBy: "issuer", issuerID: "bank-b",
                issuerNodeID: "issuer-2")
        }
        _ = try await wallet.control.addCard(WalletHarness.manual("5555555555554444"))
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-2"))
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-2"))

        let pulledA = try await wallet.issuerApp.currentTokens(.init())
        let pulledB = try await WalletV1.WalletEvents.Client(bankB).currentTokens(.init())
        #expect(pulledA.tokens.map(\.digitalCardID) == ["DNITHE000000000000000001"])
        #expect(pulledA.tokens.map(\.panLast4) == ["1111"])
        #expect(pulledB.tokens.map(\.digitalCardID) == [bankBCard])
        #expect(pulledB.tokens.map(\.panLast4) == ["4444"])
        // The pull names the selected card to its own issuer's app alone, as SELECTED_CARD_CHANGED does.
        #expect(pulledB.selectedDigitalCardID == bankBCard && pulledA.selectedDigitalCardID == "")

        var eventsA = streamA.makeAsyncIterator()
        var eventsB = streamB.makeAsyncIterator()
        let addedA = try await eventsA.next()
        #expect(addedA?.kind == .tokenizedCardAdded && addedA?.digitalCardID == "DNITHE000000000000000001")
        #expect(addedA?.sequence == 1)
        // bank-a hears that the selection moved, but not to which card: it is bank-b's.
        let selectedA = try await eventsA.next()
        #expect(selectedA?.kind == .selectedCardChanged && selectedA?.digitalCardID == "" && selectedA?.sequence == 2)
        #expect(selectedA?.tokenState == .unspecified)
        let addedB = try await eventsB.next()
        #expect(addedB?.kind == .tokenizedCardAdded && addedB?.digitalCardID == bankBCard && addedB?.sequence == 1)
        let selectedB = try await eventsB.next()
        #expect(selectedB?.kind == .selectedCardChanged && selectedB?.digitalCardID == bankBCard)
        #expect(selectedB?.sequence == 2)
        streamA.cancel()
        streamB.cancel()

        // bank-a's app cannot answer an in-app activation for bank-b's card: to it, the card does not exist.
        let answer = WalletV1.BankingAppActivationRequest(
            digitalCardID: bankBCard, result: .approved, tokenState: .active, sessionID: "session-1")
        #expect(
            await statusCode { try await wallet.appToAppAsIssuer.bankingAppActivationResponse(answer) } == .notFound)
        #expect(try wallet.store.allCards().map(\.issuerID) == ["bank-a", "bank-b"])
        #expect(try wallet.store.allCards().map(\.issuerNodeID) == ["issuer-1", "issuer-2"])
    }

    @Test func aListenerThatStopsReadingIsDroppedWithResourceExhausted() async throws {
        let wallet = try WalletHarness()
        let stream = try await wallet.issuerApp.listen(.init())
        var iterator = stream.makeAsyncIterator()
        while wallet.events.listenerCount == 0 { await Task.yield() }
        // About 6 MB of events while the app reads nothing: more than the call's 1 MB flow-control window and the
        // connection's 1 MB outbound buffer, so the wallet's handler stops and its 8-event buffer overflows.
        let big = String(repeating: "D", count: 300)
        for _ in 0..<20_000 { wallet.events.publish(WalletEventHubTests.event(big), cardIssuerNodeID: "issuer-1") }
        #expect(wallet.events.listenerCount == 0)
        var received = 0
        do {
            while try await iterator.next() != nil { received += 1 }
            Issue.record("the stream should end with RESOURCE_EXHAUSTED after \(received) events")
        } catch let error as RPCError {
            #expect(error.code == .resourceExhausted && error.message.contains("fell 8 events behind"))
        }
        #expect(received > 0 && received < 20_000)
    }
}

/// The wallet app's choices, each change an event for the issuer app.
@Suite struct WalletSelectionTests {
    @Test func settingTheActiveAccountAndSelectingACardEmitEvents() async throws {
        let wallet = try WalletHarness()
        let listener = wallet.events.subscribe()
        let account = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        #expect(account.changed && account.activeWalletAccountID == "wallet-account-2")
        let same = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        #expect(!same.changed)
        // Added to the active account, the card can be selected there.
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        let selected = try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        #expect(selected.changed && selected.selectedCardRef == "card-1")
        #expect(try await wallet.issuerApp.currentTokens(.init()).walletAccountID == "wallet-account-2")

        var iterator = listener.events.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.kind == .activeWalletAccountChanged && first?.walletAccountID == "wallet-account-2")
        #expect(await iterator.next()?.kind == .tokenizedCardAdded)
        let second = await iterator.next()
        #expect(second?.kind == .selectedCardChanged && second?.digitalCardID == "DNITHE000000000000000001")
        #expect(second?.walletAccountID == "wallet-account-2" && second?.sequence == 3)
    }

    @Test func badChoicesAreRefused() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        #expect(await statusCode { try await wallet.selection.setActiveWalletAccount(.init()) } == .invalidArgument)
        #expect(await statusCode { try await wallet.selection.selectCard(.init(cardRef: "card-9")) } == .notFound)
        #expect(
            await statusCode { try await wallet.selection.selectCard(.init(cardRef: "card-1")) } == .failedPrecondition)
        #expect(wallet.events.publish(WalletEventHubTests.event("first")) == 1, "a refused choice emits no event")
    }
}
