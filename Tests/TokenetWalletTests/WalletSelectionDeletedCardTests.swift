import Testing
import TokenetRPC
import TokenetWire

@testable import TokenetWallet

/// A deleted token never pays again and the wallet app no longer shows its card, so it does not stay the selected
/// card, whichever path deleted it: the selection goes back to the card the account selected before, else to its
/// first ACTIVE card, else to none, and the issuer app hears SELECTED_CARD_CHANGED.
@Suite struct WalletSelectionDeletedCardTests {
    /// Adds and digitizes card-N (ACTIVE) with the digital card id `id`.
    static func add(_ wallet: WalletHarness, _ cardRef: String, id: String) async throws {
        wallet.tsp.configure { $0.digitize.digitalCardID = id }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: cardRef))
    }

    /// The TSP's CARD_STATE DEACTIVATED for `id`, as after the issuer or the TSP deleted the token.
    static func deleted(_ id: String, version: UInt64) -> TspV1.Notification {
        var message = TspV1.Notification(
            messageID: "delete-\(id)", sender: "CPS", topic: "D1_NOTIFICATION", messageType: "CARD_STATE", cardID: id)
        message.body = .cardState(
            .init(tokenState: .deactivated, reasonCode: "LOST_CARD", initiator: "issuer", stateVersion: version))
        return message
    }

    /// The selection as the person sees it: asking for the active account again changes nothing and names it.
    static func selected(_ wallet: WalletHarness) async throws -> String {
        let account = WalletConfiguration.defaultAccountID
        return try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: account)).selectedCardRef
    }

    /// The SELECTED_CARD_CHANGED events published before a marker.
    static func selectionEvents(_ wallet: WalletHarness, _ events: inout AsyncStream<WalletV1.WalletEvent>.Iterator)
        async -> [String]
    {
        _ = wallet.events.publish(WalletEventHubTests.event("marker"))
        var selected: [String] = []
        while let event = await events.next(), event.digitalCardID != "marker" {
            if event.kind == .selectedCardChanged { selected.append(event.digitalCardID) }
        }
        return selected
    }

    @Test func theSelectionLeavesADeletedCardWhicheverPathDeletedIt() async throws {
        let wallet = try WalletHarness()
        try await Self.add(wallet, "card-1", id: "D1")
        try await Self.add(wallet, "card-2", id: "D2")
        try await Self.add(wallet, "card-3", id: "D3")
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-2"))
        var events = wallet.events.subscribe().events.makeAsyncIterator()

        // The person deletes the selected card: the card selected before it is selected again.
        _ = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-2", action: .delete, reasonCode: "USER_REQUEST"))
        #expect(try await Self.selected(wallet) == "card-1")
        #expect(await Self.selectionEvents(wallet, &events) == ["D1"])

        // The issuer deletes that one (CARD_STATE): no card selected before is left, so the first ACTIVE one.
        try await wallet.notifications.handle(Self.deleted("D1", version: 3))
        #expect(try await Self.selected(wallet) == "card-3")
        #expect(await Self.selectionEvents(wallet, &events) == ["D3"])

        // The last card goes too: nothing is selected, and the issuer app hears a selection without a card.
        try await wallet.notifications.handle(Self.deleted("D3", version: 3))
        #expect(try await Self.selected(wallet) == "")
        #expect(await Self.selectionEvents(wallet, &events) == [""])

        // A card deleted while not selected moves nothing and announces no selection.
        try await Self.add(wallet, "card-4", id: "D4")
        try await Self.add(wallet, "card-5", id: "D5")
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-4"))
        _ = await Self.selectionEvents(wallet, &events)
        try await wallet.notifications.handle(Self.deleted("D5", version: 3))
        #expect(try await Self.selected(wallet) == "card-4")
        #expect(await Self.selectionEvents(wallet, &events) == [])
    }

    /// The card a deletion picks (no card selected before being left) is kept: read at each look as the first
    /// ACTIVE card, it changed with states, and the issuer app never heard. A card that turns ACTIVE in an account
    /// with no card selected is not selected; a suspended selected card stays selected.
    @Test func theCardADeletionPicksIsKeptWhateverStatesChangeLater() async throws {
        let wallet = try WalletHarness()
        try await Self.add(wallet, "card-1", id: "D1")
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        var events = wallet.events.subscribe().events.makeAsyncIterator()
        try await wallet.notifications.handle(Self.deleted("D1", version: 3))
        #expect(try await Self.selected(wallet) == "")
        #expect(await Self.selectionEvents(wallet, &events) == [""])

        try await Self.add(wallet, "card-2", id: "D2")
        #expect(try await Self.selected(wallet) == "")
        try await Self.add(wallet, "card-3", id: "D3")
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-3"))
        _ = await Self.selectionEvents(wallet, &events)
        try await wallet.notifications.handle(Self.deleted("D3", version: 3))
        #expect(try await Self.selected(wallet) == "card-2")
        #expect(await Self.selectionEvents(wallet, &events) == ["D2"])

        _ = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-2", action: .suspend, reasonCode: "USER_REQUEST"))
        #expect(try await Self.selected(wallet) == "card-2")
        _ = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-2", action: .resume, reasonCode: "USER_REQUEST"))
        #expect(try await Self.selected(wallet) == "card-2")
        #expect(await Self.selectionEvents(wallet, &events) == [])
    }

    /// The store moves the selection in the delete's own write: picked in a write of its own, after it, a crash
    /// between the two lost it for good (the redelivered CARD_STATE changed nothing), and a card the person selected
    /// meanwhile was overridden.
    @Test func theStoreMovesTheSelectionInTheDeletesOwnWrite() async throws {
        let wallet = try WalletHarness()
        try await Self.add(wallet, "card-1", id: "D1")
        try await Self.add(wallet, "card-2", id: "D2")
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        let account = WalletConfiguration.defaultAccountID
        let first = try wallet.store.card(ref: "card-1")
        _ = try wallet.store.updateTokenState(
            id: first.id, state: .deactivated, nowMs: 1, account: (account, configured: account))
        let second = try wallet.store.card(ref: "card-2")
        #expect(try wallet.store.selectedCardID(of: account, configured: account) == second.id)
    }

    /// The selection is read from the cards, so a restarted wallet does not bring a deleted card back.
    @Test func aRestartedWalletKeepsTheSelectionOffADeletedCard() async throws {
        let store = try WalletStore.inMemory()
        let before = try WalletHarness(store: store)
        try await Self.add(before, "card-1", id: "D1")
        _ = try await before.selection.selectCard(.init(cardRef: "card-1"))
        try await before.notifications.handle(Self.deleted("D1", version: 3))

        let after = try WalletHarness(store: store)
        #expect(try await Self.selected(after) == "")
        let selection = try WalletSelection(store: store, configuredAccountID: WalletConfiguration.defaultAccountID)
        #expect(try selection.selectedCardRef() == "")
    }
}
