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
        #expect(changed?.kind == .tokenStatusChanged && changed?.sequence == 2)
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

    @Test func aListenerThatStopsReadingIsDroppedWithResourceExhausted() async throws {
        let wallet = try WalletHarness()
        let stream = try await wallet.issuerApp.listen(.init())
        var iterator = stream.makeAsyncIterator()
        while wallet.events.listenerCount == 0 { await Task.yield() }
        // About 6 MB of events while the app reads nothing: more than the call's 1 MB flow-control window and the
        // connection's 1 MB outbound buffer, so the wallet's handler stops and its 8-event buffer overflows.
        let big = String(repeating: "D", count: 300)
        for _ in 0..<20_000 { wallet.events.publish(WalletEventHubTests.event(big)) }
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
