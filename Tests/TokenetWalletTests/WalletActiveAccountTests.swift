import Testing
import TokenetRPC
import TokenetStorage
import TokenetWire

@testable import TokenetWallet

/// The active wallet account the person picks (`tokenet wallet use-account`): cards are added to it, each card keeps
/// the account it was added to, the push backend defaults to it, and the choice survives a restart.
@Suite struct WalletActiveAccountTests {
    let data = CardV1.EncryptedCardData(jwe: "a.b.c.d.e", publicKeyIdentifier: "kid-1")

    @Test func aCardIsAddedToTheActiveAccountAndDigitizedInIt() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        let added = try await wallet.control.addCard(WalletHarness.manual())
        #expect(added.eligible && added.walletAccountID == "wallet-account-2")
        #expect(wallet.tsp.recorded.eligibilityRequests.map(\.walletAccountID) == ["wallet-account-2"])

        // Another account made active before the T&C are accepted: the card stays in the account its eligibility
        // receipt is bound to.
        _ = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-3"))
        let listener = wallet.events.subscribe()
        let accepted = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(accepted.decision == .approved && accepted.card?.walletAccountID == "wallet-account-2")
        #expect(wallet.tsp.recorded.digitizeRequests.map(\.walletAccountID) == ["wallet-account-2"])
        var iterator = listener.events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event?.kind == .tokenizedCardAdded && event?.walletAccountID == "wallet-account-2")

        _ = try await wallet.control.addCard(WalletHarness.manual("5555555555554444"))
        let cards = try await wallet.control.listCards(.init()).cards
        #expect(cards.map(\.walletAccountID) == ["wallet-account-2", "wallet-account-3"])
    }

    /// An account id that holds a card number is refused without being echoed: ids are shown in full in every
    /// listing (`wallet cards`, `tsp tokens`), where a card number must never be.
    /// Also behind `DNITHE` (a Visa token id's prefix, whose digits a log shows whole) and inside a hex id (which a
    /// log masks, so that it read differently there than in the listings).
    @Test(arguments: [
        "4111111111111111", "acct-4111-1111-1111-1111", "DNITHE47610000100000094761000010",
        "4761000010000009aaaaaaaaaaaaaaaa",
    ])
    func anAccountIdHoldingACardNumberIsRefused(id: String) async throws {
        let wallet = try WalletHarness()
        let error = try await #require(throws: RPCError.self) {
            try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: id))
        }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("free of card numbers") && !error.message.contains(id), "\(error)")
        #expect(try await wallet.control.addCard(WalletHarness.manual()).walletAccountID != id)
    }

    /// An account id is shown in tables and log lines: one with a line break, a space or a page of text is refused,
    /// and the active account stays as it was.
    @Test(arguments: [
        "two\nlines", "with space", "tab\there", String(repeating: "a", count: 65), "bell\u{7}", "a\u{202E}b",
        "zero\u{200B}width", "line\u{2028}separator",
    ])
    func anAccountIdThatWouldBreakATableIsRefused(id: String) async throws {
        let wallet = try WalletHarness()
        let error = try await #require(throws: RPCError.self) {
            try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: id))
        }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("1 to 64 characters without spaces, control or format characters"))
        #expect(
            try await wallet.control.addCard(WalletHarness.manual()).walletAccountID
                == WalletConfiguration.defaultAccountID)
        #expect(
            try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: String(repeating: "é", count: 64)))
                .changed)
    }

    /// Each account keeps its own selected card: the answer to a switch names the selected card of the account now
    /// in use, none when it has none, and the first account's card again on switching back.
    @Test func aSwitchOfAccountNamesTheSelectedCardOfTheAccountNowInUse() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(try await wallet.selection.selectCard(.init(cardRef: "card-1")).selectedCardRef == "card-1")

        let other = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        #expect(other.changed && other.selectedCardRef == "")
        _ = try await wallet.control.addCard(WalletHarness.manual("5555555555554444"))
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-2"))
        #expect(try await wallet.selection.selectCard(.init(cardRef: "card-2")).selectedCardRef == "card-2")

        let back = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-1"))
        #expect(back.changed && back.selectedCardRef == "card-1")
        let again = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        #expect(again.selectedCardRef == "card-2")
    }

    /// The issuer app hears a switch of account change the selection too: SELECTED_CARD_CHANGED without a card for an
    /// account with none selected, with the account's own card on switching back.
    @Test func aSwitchOfAccountTellsTheIssuerAppTheSelectionOfTheAccountNowInUse() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        let digitized = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        var events = wallet.events.subscribe().events.makeAsyncIterator()

        // A marker after each switch: the events the switch made come before it.
        _ = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        _ = wallet.events.publish(WalletEventHubTests.event("marker-1"))
        #expect(await events.next()?.kind == .activeWalletAccountChanged)
        let none = await events.next()
        #expect(none?.kind == .selectedCardChanged && none?.digitalCardID == "")
        #expect(none?.walletAccountID == "wallet-account-2")
        if none?.kind == .selectedCardChanged { _ = await events.next() }  // marker-1

        _ = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-1"))
        _ = wallet.events.publish(WalletEventHubTests.event("marker-2"))
        #expect(await events.next()?.kind == .activeWalletAccountChanged)
        let back = await events.next()
        #expect(back?.kind == .selectedCardChanged && back?.digitalCardID == digitized.card?.digitalCardID)
        #expect(back?.digitalCardID.isEmpty == false)
    }

    /// The card selected in a database from before each account kept its own (schema 7) stays selected in its
    /// account, and only there.
    @Test func theCardSelectedBeforeAccountsKeptTheirOwnStaysSelected() throws {
        let database = try Database.openInMemory()
        try Migrator(Array(WalletStore.migrations.prefix(7))).migrate(database)
        for account in ["NULL", "'wallet-account-2'"] {
            _ = try database.execute(
                """
                INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms,
                    wallet_account_id, created_at_ms, updated_at_ms)
                VALUES ('manual', 1, '1111', 'DIGITIZED', 'receipt', 0, \(account), 1, 1)
                """)
        }
        _ = try database.execute("INSERT INTO selection (id, selected_card_id) VALUES (1, 2)")
        let store = try WalletStore(database: database)
        #expect(try store.selectedCardID(of: "wallet-account-2", configured: "wallet-account-1") == 2)
        #expect(try store.selectedCardID(of: "wallet-account-1", configured: "wallet-account-1") == nil)
        let selection = try WalletSelection(store: store, configuredAccountID: "wallet-account-1")
        #expect(try selection.selectedCardRef() == "")
        #expect(try selection.setActive("wallet-account-2", nowMs: 1) && selection.selectedCardRef() == "card-2")
    }

    @Test func theChoicesSurviveARestart() async throws {
        let store = try WalletStore.inMemory()
        let before = try WalletHarness(store: store)
        _ = try await before.control.addCard(WalletHarness.manual())
        _ = try await before.control.acceptTerms(.init(cardRef: "card-1"))
        _ = try await before.selection.selectCard(.init(cardRef: "card-1"))
        _ = try await before.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))

        // A new router on the same database, as wallet-node builds after a restart.
        let after = try WalletHarness(store: store)
        #expect(try await after.issuerApp.currentTokens(.init()).walletAccountID == "wallet-account-2")
        let same = try await after.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        #expect(!same.changed && same.selectedCardRef == "")
        let back = try await after.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-1"))
        #expect(back.changed && back.selectedCardRef == "card-1")
        _ = try await after.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        #expect(try await after.control.addCard(WalletHarness.manual()).walletAccountID == "wallet-account-2")
        #expect(after.tsp.recorded.eligibilityRequests.map(\.walletAccountID) == ["wallet-account-2"])
    }

    /// A deleted card is no longer shown, so it cannot be selected; the selection stays as it was. The refusal names
    /// the card added again in its place (same scheme, last four digits and account) as the one to select; it said
    /// "deleted; add the card again" to a person who had just done so.
    @Test func aDeletedCardCannotBeSelected() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(try await wallet.selection.selectCard(.init(cardRef: "card-1")).selectedCardRef == "card-1")
        _ = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        let alone = try await #require(throws: RPCError.self) {
            try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        }
        #expect(alone.code == .failedPrecondition)
        #expect(
            alone.message.hasPrefix("card-1 is DEACTIVATED (its token was deleted, or replaced when the card was added")
                && alone.message.hasSuffix("so it cannot be the selected card; add the card again"), "\(alone.message)")
        // Added again and waiting for its T&C: that card is named, with the step it waits for.
        _ = try await wallet.control.addCard(WalletHarness.manual())
        let waiting = try await #require(throws: RPCError.self) {
            try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        }
        let last4 = try wallet.store.card(ref: "card-1").panLast4
        #expect(
            waiting.message.hasSuffix(
                "; card-2, a card ending \(last4) in the same wallet account, waits for its T&C: accept them (tokenet "
                    + "wallet accept-terms WALLET_ADDR card-2), then select it"), "\(waiting.message)")
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-2"))
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-2"))
        let error = try await #require(throws: RPCError.self) {
            try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        }
        #expect(error.code == .failedPrecondition)
        #expect(
            error.message.hasSuffix(
                "; card-2, a card ending \(last4) in the same wallet account, is ACTIVE: select it instead"),
            "\(error.message)")
        #expect(try wallet.store.selection().selectedCardID == (try wallet.store.card(ref: "card-2")).id)
    }

    /// The wallet app shows only the active account's cards: selecting a card of another account is refused, and
    /// the selection stays as it was. It was accepted, and the event named the active account with the other's card.
    @Test func aCardOfAnotherAccountCannotBeSelected() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        _ = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        let error = try await #require(throws: RPCError.self) {
            try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        }
        #expect(error.code == .failedPrecondition)
        #expect(error.message.contains("card-1 is in wallet account \(WalletConfiguration.defaultAccountID)"))
        _ = try await wallet.selection.setActiveWalletAccount(
            .init(walletAccountID: WalletConfiguration.defaultAccountID))
        #expect(try await wallet.selection.selectCard(.init(cardRef: "card-1")).selectedCardRef == "card-1")
    }

    @Test func aCardStoredBeforeAccountsWereRecordedStaysInTheConfiguredAccount() async throws {
        let store = try WalletStore.inMemory()
        let wallet = try WalletHarness(store: store)
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try store.database.execute("UPDATE cards SET wallet_account_id = NULL")
        _ = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(wallet.tsp.recorded.digitizeRequests.map(\.walletAccountID) == [WalletConfiguration.defaultAccountID])
        let cards = try await wallet.control.listCards(.init()).cards
        #expect(cards.map(\.walletAccountID) == [WalletConfiguration.defaultAccountID])
    }

    @Test func aPushWithoutAnAccountGoesToTheActiveOneAndMayNameAnyOfTheWalletsAccounts() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-2"))
        _ = try await wallet.selection.setActiveWalletAccount(.init(walletAccountID: "wallet-account-3"))
        _ = try await wallet.push.pushCardData(.init(encryptedCardData: data))
        for account in [WalletConfiguration.defaultAccountID, "wallet-account-2"] {
            _ = try await wallet.push.pushCardData(.init(encryptedCardData: data, walletAccountID: account))
        }
        #expect(
            wallet.tsp.recorded.pushSessionRequests.map(\.walletAccountID) == [
                "wallet-account-3", WalletConfiguration.defaultAccountID, "wallet-account-2",
            ])
        do {
            _ = try await wallet.push.pushCardData(.init(encryptedCardData: data, walletAccountID: "someone-else"))
            Issue.record("a push to an account the wallet does not have should be refused")
        } catch let error as RPCError {
            #expect(error.code == .notFound)
            #expect(error.message.contains("this wallet has no account someone-else"), "\(error.message)")
            // The other accounts belong to the wallet's users: an issuer's mistake does not list them.
            #expect(!error.message.contains("wallet-account-"), "\(error.message)")
        }
        #expect(wallet.tsp.recorded.pushSessionRequests.count == 3)
    }
}
