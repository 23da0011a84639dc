import Synchronization
import Testing
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetWallet

/// Cards stored before the wallet recorded issuers, after an upgrade: hidden from every issuer app until the TSP
/// names their issuer, then shown to that issuer's app only.
@Suite struct WalletIssuerResolverTests {
    /// The waits a resolver was told to take.
    final class Waits: Sendable {
        let list = Mutex<[UInt64]>([])
    }

    static let ownToken = "DNITHE000000000000000001"
    static let otherAccountsToken = "DNITHE000000000000000002"
    /// What the TSP holds: card-1's token in the configured account, issued by bank-a.
    static let ownTokensIssuer = FakeTSP.TokenIssuer(
        walletAccountID: WalletConfiguration.defaultAccountID, issuerID: "bank-a", nodeID: "issuer-1")
    /// What the TSP holds for card-2's token: another account than the card's, so it answers NOT_FOUND.
    static let otherAccountsTokensIssuer = FakeTSP.TokenIssuer(
        walletAccountID: "wallet-account-9", issuerID: "bank-b", nodeID: "issuer-2")

    /// Each question's deadline in these tests: the fake TSP answers at once, but with every test of the run
    /// started together a question can wait its turn for longer than the node's 30 s, and a question that times out
    /// is asked again after a backoff the tests would count among the waits.
    static let callTimeout: Duration = .seconds(600)

    /// A wallet whose database was written at schema 3: card-1 in the configured account (no account recorded),
    /// card-2 in wallet-account-2.
    static func upgradedWallet() throws -> WalletHarness {
        let database = try Database.openInMemory()
        try Migrator(Array(WalletStore.migrations.prefix(3))).migrate(database)
        for (token, account) in [(ownToken, nil), (otherAccountsToken, "wallet-account-2")] as [(String, String?)] {
            let result = TspV1.DigitizeResponse(
                decision: .approved, digitalCardID: token, tokenState: .active, tokenLast4: "9012", scheme: .visa,
                panLast4: "1111", decidedBy: "issuer")
            _ = try database.execute(
                """
                INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms,
                    result, wallet_account_id, created_at_ms, updated_at_ms)
                VALUES ('manual', 1, '1111', 'DIGITIZED', 'receipt', 0, ?, ?, 1, 1)
                """, [try result.serializedBytes(), account])
        }
        return try WalletHarness(store: try WalletStore(database: database))
    }

    /// The resolver as the wallet node runs it, calling the harness's fake TSP as wallet-1 over the in-memory
    /// transport, waiting with `sleep`.
    static func resolver(
        _ wallet: WalletHarness, level: LogLevel = .info,
        clock: @escaping @Sendable () -> UInt64 = WalletNode.nowMs, wakeup: IssuerResolutionWakeup = .init(),
        storedLater: IssuerlessCardSignal? = nil, sleep: @escaping @Sendable (UInt64) async throws -> Void
    ) -> WalletIssuerResolver {
        return WalletIssuerResolver(
            tsp: wallet.tspAsWallet(), store: wallet.store, events: wallet.events,
            configuredAccountID: WalletConfiguration.defaultAccountID,
            logger: Logger(node: "wallet-node", level: level, sink: wallet.logs), clock: clock, sleep: sleep,
            wakeup: wakeup, callTimeout: callTimeout, storedLater: storedLater)
    }

    /// The resolver whose `waits` records each wait it was told to take, which passes at once, but the node stops
    /// during the one after `stopAfter` waits. `waited` runs after each wait, with the waits so far.
    static func resolver(
        _ wallet: WalletHarness, waits: Waits, stopAfter: Int = .max, level: LogLevel = .debug,
        storedLater: IssuerlessCardSignal? = nil, waited: @escaping @Sendable ([UInt64]) -> Void = { _ in }
    ) -> WalletIssuerResolver {
        resolver(
            wallet, level: level, clock: { 2_000_000 }, storedLater: storedLater,
            sleep: { milliseconds in
                let list = waits.list.withLock {
                    $0.append(milliseconds)
                    return $0
                }
                if list.count > stopAfter { throw CancellationError() }
                waited(list)
            })
    }

    @Test func aCardBecomesVisibleToItsOwnIssuerAppOnlyOnceTheTSPNamesIt() async throws {
        let wallet = try Self.upgradedWallet()
        let otherApp = WalletV1.WalletEvents.Client(wallet.asIssuer("issuer-2"))
        #expect(try await wallet.issuerApp.currentTokens(.init()).tokens.isEmpty)
        #expect(try await otherApp.currentTokens(.init()).tokens.isEmpty)

        wallet.tsp.configure {
            $0.tokenIssuers = [
                Self.ownToken: Self.ownTokensIssuer, Self.otherAccountsToken: Self.otherAccountsTokensIssuer,
            ]
            // The TSP is down for the first two calls.
            $0.tokenIssuerFailures = 2
        }
        let ownListener = wallet.events.subscribe(as: .issuerApp(nodeID: "issuer-1"))
        let otherListener = wallet.events.subscribe(as: .issuerApp(nodeID: "issuer-2"))
        let waits = Waits()
        // The node stops while the card the TSP does not know waits to be asked about again.
        let machine = await Self.resolver(wallet, waits: waits, stopAfter: 2).run()

        #expect(waits.list.withLock { $0 } == [1_000, 2_000, 60_000], "\(wallet.logs.lines)")
        #expect(machine.phase(of: 1) == .resolved && machine.phase(of: 2) == .notFound)
        #expect(
            wallet.tsp.recorded.tokenIssuerRequests.map(\.walletAccountID)
                == Array(repeating: WalletConfiguration.defaultAccountID, count: 3) + ["wallet-account-2"])
        #expect(try await wallet.issuerApp.currentTokens(.init()).tokens.map(\.digitalCardID) == [Self.ownToken])
        #expect(try await otherApp.currentTokens(.init()).tokens.isEmpty)
        let stored = try wallet.store.card(ref: "card-1")
        #expect(stored.issuerID == "bank-a" && stored.issuerNodeID == "issuer-1")
        #expect(try wallet.store.card(ref: "card-2").issuerID == nil)

        // The card's own app hears of it as an added card; the other app hears nothing about it. A marker ends
        // what each heard, so a missing event fails the test instead of leaving it waiting.
        wallet.events.publish(WalletV1.WalletEvent(kind: .activeWalletAccountChanged, walletAccountID: "marker"))
        let heard = await Self.eventsBeforeMarker(ownListener)
        #expect(heard.map(\.kind) == [.tokenizedCardAdded] && heard.first?.digitalCardID == Self.ownToken, "\(heard)")
        #expect(heard.first?.walletAccountID == WalletConfiguration.defaultAccountID)
        #expect(heard.first?.tokenState == .active)
        #expect(await Self.eventsBeforeMarker(otherListener).isEmpty)

        // The counts are logged, and no card number.
        let lines = wallet.logs.lines
        #expect(lines.contains { $0.contains("resolved=1") && $0.contains("remaining=1") }, "\(lines)")
        #expect(!lines.contains { $0.contains("4111111111111111") })
    }

    /// A card the TSP did not know is asked about again after 5 minutes, 10, 20, …, while the node runs, and shown
    /// to its issuer's app once the TSP names its issuer. The log says once that it will ask again, and names no
    /// card in the rounds that change nothing.
    @Test func aCardTheTSPDidNotKnowIsAskedAboutAgainUntilItNamesTheIssuer() async throws {
        let wallet = try Self.upgradedWallet()
        let otherApp = WalletV1.WalletEvents.Client(wallet.asIssuer("issuer-2"))
        wallet.tsp.configure {
            $0.tokenIssuers = [
                Self.ownToken: Self.ownTokensIssuer, Self.otherAccountsToken: Self.otherAccountsTokensIssuer,
            ]
        }
        let waits = Waits()
        let tsp = wallet.tsp
        let machine = await Self.resolver(wallet, waits: waits, level: .info) { waits in
            // The TSP learns of the token during the third round's wait (its rest and the rest of it).
            if waits.count == 6 {
                tsp.configure { $0.tokenIssuers[Self.otherAccountsToken]?.walletAccountID = "wallet-account-2" }
            }
        }.run()

        #expect(
            waits.list.withLock { $0 } == [60_000, 240_000, 60_000, 540_000, 60_000, 1_140_000],
            "\(wallet.logs.lines)")
        #expect(machine.phase(of: 1) == .resolved && machine.phase(of: 2) == .resolved && machine.round == 3)
        #expect(wallet.tsp.recorded.tokenIssuerRequests.map(\.digitalCardID).filter { $0 == Self.ownToken }.count == 1)
        #expect(wallet.tsp.recorded.tokenIssuerRequests.count == 5)
        #expect(try await otherApp.currentTokens(.init()).tokens.map(\.digitalCardID) == [Self.otherAccountsToken])
        let stored = try wallet.store.card(ref: "card-2")
        #expect(stored.issuerID == "bank-b" && stored.issuerNodeID == "issuer-2")

        let lines = wallet.logs.lines
        #expect(lines.filter { $0.contains("does not know a card") }.count == 1, "\(lines)")
        #expect(lines.filter { $0.contains("does not know some cards") }.count == 1, "\(lines)")
        #expect(lines.filter { $0.contains("issuers of cards stored without one") }.count == 2, "\(lines)")
        #expect(lines.contains { $0.contains("resolved=2") && $0.contains("remaining=0") }, "\(lines)")
    }

    /// A card stored without an issuer while the resolver waits for a recheck (digitized by a TSP that named no
    /// issuer) is asked about in that round, and shown to its issuer's app without the node restarting.
    @Test func aCardStoredAfterTheStartIsAskedAboutInTheNextRecheck() async throws {
        let wallet = try Self.upgradedWallet()
        let laterToken = "DNITHE000000000000000003"
        wallet.tsp.configure {
            $0.tokenIssuers = [
                Self.ownToken: Self.ownTokensIssuer, Self.otherAccountsToken: Self.otherAccountsTokensIssuer,
                laterToken: .init(
                    walletAccountID: WalletConfiguration.defaultAccountID, issuerID: "bank-c", nodeID: "issuer-3"),
            ]
        }
        let store = wallet.store
        let waits = Waits()
        // The node stops during the wait before the second round of rechecks.
        let machine = await Self.resolver(wallet, waits: waits, stopAfter: 3) { waits in
            guard waits.count == 1 else { return }
            let result = TspV1.DigitizeResponse(
                decision: .approved, digitalCardID: laterToken, tokenState: .active, tokenLast4: "9012",
                scheme: .visa, panLast4: "1111", decidedBy: "issuer")
            guard let bytes = try? result.serializedBytes() else { return }
            _ = try? store.database.execute(
                """
                INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms,
                    result, digital_card_id, created_at_ms, updated_at_ms)
                VALUES ('manual', 1, '1111', 'DIGITIZED', 'receipt', 0, ?, ?, 1, 1)
                """, [bytes, laterToken])
        }.run()

        #expect(machine.phase(of: 3) == .resolved && machine.round == 1, "\(wallet.logs.lines)")
        #expect(try wallet.store.card(ref: "card-3").issuerNodeID == "issuer-3")
        let app = WalletV1.WalletEvents.Client(wallet.asIssuer("issuer-3"))
        #expect(try await app.currentTokens(.init()).tokens.map(\.digitalCardID) == [laterToken])
    }

    /// A card stored without an issuer once the first round left nothing to recheck (every card resolved) starts
    /// the rechecks: it is asked about after the first recheck's wait while the node runs, not only at the next
    /// start, and shown to its issuer's app.
    @Test(.timeLimit(.minutes(3))) func aCardStoredOnceNothingWasLeftToRecheckStartsTheRechecks() async throws {
        let wallet = try Self.upgradedWallet()
        let laterToken = "DNITHE000000000000000003"
        wallet.tsp.configure {
            $0.tokenIssuers = [
                Self.ownToken: Self.ownTokensIssuer,
                Self.otherAccountsToken: .init(
                    walletAccountID: "wallet-account-2", issuerID: "bank-a", nodeID: "issuer-1"),
                laterToken: Self.ownTokensIssuer,
            ]
        }
        let listener = wallet.events.subscribe(as: .issuerApp(nodeID: "issuer-1"))
        var heard = listener.events.makeAsyncIterator()
        let waits = Waits()
        let signal = IssuerlessCardSignal()
        let resolver = Self.resolver(wallet, waits: waits, storedLater: signal)
        let running = Task { await resolver.run() }
        // Both cards are resolved: nothing is left to recheck.
        for _ in 0..<2 { _ = await heard.next() }
        let result = TspV1.DigitizeResponse(
            decision: .approved, digitalCardID: laterToken, tokenState: .active, tokenLast4: "9012", scheme: .visa,
            panLast4: "1111", decidedBy: "issuer")
        _ = try wallet.store.database.execute(
            """
            INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms,
                result, digital_card_id, created_at_ms, updated_at_ms)
            VALUES ('manual', 1, '1111', 'DIGITIZED', 'receipt', 0, ?, ?, 1, 1)
            """, [try result.serializedBytes(), laterToken])
        signal.cardStored()
        let added = await heard.next()
        running.cancel()
        let machine = await running.value

        #expect(added?.digitalCardID == laterToken)
        #expect(waits.list.withLock { $0 } == [60_000, 240_000], "\(wallet.logs.lines)")
        #expect(machine.phase(of: 3) == .resolved && machine.round == 1)
        #expect(try wallet.store.card(ref: "card-3").issuerNodeID == "issuer-1")
    }

    /// A digitization the TSP answers naming no issuer tells the resolver, which then starts the rechecks: the card
    /// is the only one awaiting its issuer.
    @Test(.timeLimit(.minutes(3))) func aCardDigitizedWithoutAnIssuerIsSignalled() async throws {
        let wallet = try WalletHarness()
        var tspRouter = RPCRouter()
        wallet.tsp.register(on: &tspRouter)
        let wallet1 = PeerIdentity(role: .wallet, nodeID: "wallet-1")
        let tsp = WalletHarness.serve(tspRouter, client: wallet1, server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        let signal = IssuerlessCardSignal()
        let configuration = WalletConfiguration()
        var router = RPCRouter()
        WalletControlService(
            tsp: tsp, store: wallet.store, configuration: configuration,
            selection: try WalletSelection(store: wallet.store, configuredAccountID: configuration.walletAccountID),
            logger: Logger(node: "wallet-node", sink: wallet.logs), issuerless: signal
        ).register(on: &router)
        let control = WalletV1.WalletControl.Client(
            WalletHarness.serve(router, client: PeerIdentity(role: .operator, nodeID: "operator-1"), server: wallet1))
        var signals = signal.stream.makeAsyncIterator()

        _ = try await control.addCard(WalletHarness.manual())
        _ = try await control.acceptTerms(.init(cardRef: "card-1"))
        wallet.tsp.configure { $0.issuer = (id: "", nodeID: "") }
        _ = try await control.addCard(WalletHarness.manual())
        _ = try await control.acceptTerms(.init(cardRef: "card-2"))
        #expect(await signals.next() != nil)
        #expect(try wallet.store.cardsAwaitingIssuer().map(\.cardRef) == ["card-2"])
    }

    /// While the TSP cannot be reached, the first round says so once at info level, not on every retry.
    @Test func anUnreachableTSPIsLoggedOnceInTheFirstRound() async throws {
        let wallet = try Self.upgradedWallet()
        wallet.tsp.configure {
            $0.tokenIssuers = [Self.ownToken: Self.ownTokensIssuer]
            $0.tokenIssuerFailures = 3
        }
        let waits = Waits()
        let machine = await Self.resolver(wallet, waits: waits, stopAfter: 3, level: .info).run()

        #expect(waits.list.withLock { $0 } == [1_000, 2_000, 4_000, 60_000], "\(wallet.logs.lines)")
        #expect(machine.phase(of: 1) == .resolved)
        let lines = wallet.logs.lines
        #expect(lines.filter { $0.contains("could not name a card's issuer") }.count == 1, "\(lines)")
    }

    /// An issuer app asking for its cards ends the wait before a round of rechecks, once its first minute is over.
    @Test func anIssuerAppAskingForItsCardsEndsTheWaitForARecheck() async throws {
        let wallet = try Self.upgradedWallet()
        wallet.tsp.configure {
            $0.tokenIssuers = [Self.ownToken: Self.ownTokensIssuer]
        }
        let wakeup = IssuerResolutionWakeup()
        let (waiting, waits) = AsyncStream.makeStream(of: UInt64.self)
        let tsp = wallet.tsp
        let resolver = Self.resolver(wallet, wakeup: wakeup) { milliseconds in
            waits.yield(milliseconds)
            // The rest before a round passes; a wait the app does not cut short ends the resolution, and the
            // test fails.
            if milliseconds == IssuerResolution.recheckRestMs {
                // The TSP learns of the token while the resolver rests.
                tsp.configure {
                    $0.tokenIssuers[Self.otherAccountsToken] = .init(
                        walletAccountID: "wallet-account-2", issuerID: "bank-b", nodeID: "issuer-2")
                }
                return
            }
            try await Task.sleep(for: .seconds(600))
            throw CancellationError()
        }
        let run = Task { await resolver.run() }
        var iterator = waiting.makeAsyncIterator()
        #expect(await iterator.next() == 60_000)
        #expect(await iterator.next() == 240_000)
        wakeup.issuerAppAsked()

        let machine = await run.value
        #expect(machine.phase(of: 2) == .resolved && machine.round == 1)
        #expect(try wallet.store.card(ref: "card-2").issuerNodeID == "issuer-2")
    }

    /// The events a listener heard before the marker event.
    static func eventsBeforeMarker(_ subscription: WalletEventHub.Subscription) async -> [WalletV1.WalletEvent] {
        var heard: [WalletV1.WalletEvent] = []
        for await event in subscription.events {
            if event.walletAccountID == "marker" { break }
            heard.append(event)
        }
        return heard
    }

    /// While the TSP cannot be reached the resolver waits up to a minute between tries; an issuer app asking for
    /// its cards ends the wait, and the card it may see is resolved at once.
    @Test func anIssuerAppAskingForItsCardsEndsTheWaitForTheTSP() async throws {
        let wallet = try Self.upgradedWallet()
        wallet.tsp.configure {
            $0.tokenIssuers = [Self.ownToken: Self.ownTokensIssuer]
            $0.tokenIssuerFailures = 1
        }
        let wakeup = IssuerResolutionWakeup()
        var router = RPCRouter()
        WalletEventsService(
            hub: wallet.events, store: wallet.store,
            selection: try WalletSelection(
                store: wallet.store, configuredAccountID: WalletConfiguration.defaultAccountID),
            logger: Logger(node: "wallet-node", sink: wallet.logs), issuerResolution: wakeup
        ).register(on: &router)
        let app = WalletV1.WalletEvents.Client(
            WalletHarness.serve(
                router, client: PeerIdentity(role: .issuer, nodeID: "issuer-1"),
                server: PeerIdentity(role: .wallet, nodeID: "wallet-1")))

        let (waiting, waits) = AsyncStream.makeStream(of: UInt64.self)
        let resolver = Self.resolver(wallet, wakeup: wakeup) { milliseconds in
            // The node stops once card-2, which the TSP does not know, waits to be asked about again.
            guard milliseconds < IssuerResolution.recheckRestMs else { throw CancellationError() }
            waits.yield(milliseconds)
            // A wait the app does not cut short ends the resolution unresolved, and the test fails.
            try await Task.sleep(for: .seconds(600))
            throw CancellationError()
        }
        let run = Task { await resolver.run() }
        var iterator = waiting.makeAsyncIterator()
        #expect(await iterator.next() == 1_000)
        #expect(try await app.currentTokens(.init()).tokens.isEmpty)

        let machine = await run.value
        #expect(machine.phase(of: 1) == .resolved)
        #expect(try await app.currentTokens(.init()).tokens.map(\.digitalCardID) == [Self.ownToken])
        #expect(wallet.logs.lines.contains { $0.contains("an issuer app asked for its cards") })
    }

    /// An app that asked just before the wait began is not lost; a wait whose node stops ends with it.
    @Test func aQuestionBeforeTheWaitEndsItAndCancellingEndsItToo() async throws {
        let wakeup = IssuerResolutionWakeup()
        let long: @Sendable (UInt64) async throws -> Void = { _ in try await Task.sleep(for: .seconds(600)) }
        wakeup.issuerAppAsked()
        #expect(try await wakeup.wait(60_000, sleep: long))
        #expect(try await wakeup.wait(0, sleep: { _ in }) == false, "the question was used up")

        let waiting = Task { try await wakeup.wait(60_000, sleep: long) }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
    }

    @Test func aWalletWithNothingToResolveAsksNothing() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        let machine = await Self.resolver(wallet, waits: Waits()).run()
        #expect(machine.cards.isEmpty && wallet.tsp.recorded.tokenIssuerRequests.isEmpty)
    }

    @Test func aStoppingNodeEndsTheWaitsForAnUnreachableTSP() async throws {
        let wallet = try Self.upgradedWallet()
        wallet.tsp.configure { $0.tokenIssuerFailures = 1_000 }
        let resolver = Self.resolver(wallet) { _ in throw CancellationError() }
        let machine = await resolver.run()
        #expect(machine.phase(of: 1) == .failedRetry(attempts: 1) && machine.phase(of: 2) == .pending)
        #expect(try await wallet.issuerApp.currentTokens(.init()).tokens.isEmpty)
    }
}
