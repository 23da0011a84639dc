import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// The notification journal: a state change and the notifications reporting it commit together, the broker
/// removes a row in the commit that stores its message, and a TSP that stopped in between publishes it at start.
@Suite struct NotificationJournalTests {
    static let card = OTPStoreTests.card

    /// A store holding one token of wallet node "wallet-1", whose issuer registered as node "issuer-1".
    static func makeStore(path: String? = nil, state: TokenLifecycleStateMachine.State = .active) throws -> TSPStore {
        let store = try OTPStoreTests.makeStore(path: path, state: state)
        _ = try store.database.execute("UPDATE tokens SET wallet_node_id = 'wallet-1'")
        _ = try store.database.execute("UPDATE issuers SET peer_node_id = 'issuer-1'")
        return store
    }

    static func suspend(
        _ store: TSPStore,
        announce: @escaping (TokenStateChange) throws -> [Announcement] = {
            TSPService.cardState($0, reason: "LOST_CARD", initiator: "tsp")
        }
    ) throws -> Journaled<TokenStateChange> {
        try store.changeTokenState(
            card, event: .suspend, actor: "tsp", reason: "LOST_CARD", traceID: "trace-1", nowMs: OTPStoreTests.t0,
            announce: announce, authorize: { _ in })
    }

    static func journalRows(_ database: Database) throws -> Int64 {
        try database.queryOne("SELECT COUNT(*) FROM notification_journal")?.int64(0) ?? -1
    }

    struct AnnounceFailed: Error {}

    @Test func aChangeAndItsNotificationsCommitTogether() throws {
        let store = try Self.makeStore()
        let journaled = try Self.suspend(store)
        #expect(journaled.value.after.state == .suspended)
        let entry = try #require(journaled.notifications.first)
        #expect(journaled.notifications.count == 1)
        #expect(entry.subscribers == ["wallet/wallet-1", "issuer/issuer-1"])
        #expect(entry.notification.messageID.hasPrefix("msg-"))
        #expect(entry.notification.messageType == "CARD_STATE")
        #expect(
            entry.notification.body
                == .cardState(
                    .init(
                        tokenState: .suspended, reasonCode: "LOST_CARD", initiator: "tsp", stateVersion: 2,
                        suspensions: [.init(party: "tsp", reasonCode: "LOST_CARD")])))
        #expect(try NotificationStore(database: store.database).journaled() == [entry])

        // A change whose notifications cannot be journaled is not committed either.
        #expect(throws: AnnounceFailed.self) {
            try store.changeTokenState(
                Self.card, event: .resume, actor: "tsp", reason: "FOUND", traceID: "trace-2",
                nowMs: OTPStoreTests.t0 + 1, announce: { _ in throw AnnounceFailed() }, authorize: { _ in })
        }
        #expect(try store.token(Self.card)?.state == .suspended)
        #expect(try store.events(of: Self.card).count == 1)
        #expect(try Self.journalRows(store.database) == 1)

        // A refused change journals nothing.
        #expect(throws: TSPError.self) {
            try store.changeTokenState(
                Self.card, event: .suspend, actor: "tsp", reason: "LOST_CARD", traceID: "trace-3",
                nowMs: OTPStoreTests.t0 + 2, announce: { _ in throw AnnounceFailed() },
                authorize: { _ in throw TSPError(.permissionDenied, "not yours") })
        }
        #expect(try Self.journalRows(store.database) == 1)
    }

    @Test func theBrokerRemovesTheRowInTheCommitThatStoresTheMessage() async throws {
        let directory = try TSPHarness.temporaryDirectory()
        let store = try Self.makeStore(path: directory + "/tsp.sqlite")
        let entry = try #require(try Self.suspend(store).notifications.first)
        let harness = try BrokerHarness.make(directory: directory)
        #expect(try await harness.broker.publish(journaled: entry))
        #expect(try Self.journalRows(harness.database) == 0)
        var wallet = try await harness.client().subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        let received = try await wallet.take(1)
        #expect(received.map(\.messageID) == [entry.notification.messageID])
        #expect(received.first?.body == entry.notification.body)
    }

    /// A kill -9 between the change's commit and the broker's: the change and its journal row are on disk, the
    /// broker holds nothing. The restarted node publishes it before serving, under the id it was journaled with.
    @Test func aRestartedNodePublishesWhatACrashLeftJournaled() async throws {
        let tsp = try TSPHarness.make()
        let token = try #require(try await tsp.activeTokens(1).first)
        let store = try TSPStore.open(
            path: tsp.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        let journaled = try store.changeTokenState(
            token, event: .suspend, actor: "tsp", reason: "LOST_CARD", traceID: "trace-1",
            nowMs: tsp.clock.now.unixMilliseconds,
            announce: { TSPService.cardState($0, reason: "LOST_CARD", initiator: "tsp") }, authorize: { _ in })
        let entry = try #require(journaled.notifications.first)
        #expect(entry.subscribers == ["wallet/wallet-1", "issuer/issuer-1"])
        try store.database.close()

        let restarted = try TSPHarness.make(directory: tsp.directory, clock: tsp.clock)
        func client(_ role: PeerRole, _ node: String) -> TspV1.Notifications.Client {
            TspV1.Notifications.Client(TSPHarness.connect(restarted.router, as: PeerIdentity(role: role, nodeID: node)))
        }
        let wallet = client(.wallet, "wallet-1")
        try #require(try await wallet.queueStatus(TspV1.QueueStatusRequest()).pending == 1)
        var walletStream = try await wallet.subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        let received = try #require(try await walletStream.take(1).first)
        // What the wallet applies (the state, the card) and keeps to recognise a repeat (the id) are as journaled.
        #expect(received.messageID == entry.notification.messageID)
        #expect(received.sender == "CPS")
        #expect(received.messageType == "CARD_STATE")
        #expect(received.cardID == token)
        #expect(
            received.body
                == .cardState(
                    .init(
                        tokenState: .suspended, reasonCode: "LOST_CARD", initiator: "tsp", stateVersion: 3,
                        suspensions: [.init(party: "tsp", reasonCode: "LOST_CARD")])))
        let issuer = client(.issuer, "issuer-1")
        try #require(try await issuer.queueStatus(TspV1.QueueStatusRequest()).pending == 1)
        var issuerStream = try await issuer.subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        #expect(try await issuerStream.take(1).map(\.messageID) == [entry.notification.messageID])

        // Published once: the row went with the broker's commit, so a further restart publishes nothing again.
        _ = try await wallet.acknowledge(TspV1.AcknowledgeRequest(messageIds: [received.messageID]))
        let again = try TSPHarness.make(directory: tsp.directory, clock: tsp.clock)
        let status = try await TspV1.Notifications.Client(
            TSPHarness.connect(again.router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1"))
        ).queueStatus(TspV1.QueueStatusRequest())
        #expect(status.pending == 0)
        #expect(status.lastSequence == 1)
    }
}

extension NotificationJournalTests {
    /// Journaled notifications the broker cannot store at start stop the start: served anyway, the node left them
    /// journaled with nothing to publish them, and the next change's messages overtook them.
    @Test func aJournalThatCannotBeStoredAtStartStopsTheStart() async throws {
        let tsp = try TSPHarness.make()
        let token = try #require(try await tsp.activeTokens(1).first)
        let store = try TSPStore.open(
            path: tsp.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        _ = try store.changeTokenState(
            token, event: .suspend, actor: "tsp", reason: "LOST_CARD", traceID: "trace-1",
            nowMs: tsp.clock.now.unixMilliseconds,
            announce: { TSPService.cardState($0, reason: "LOST_CARD", initiator: "tsp") }, authorize: { _ in })
        try store.database.executeScript(
            "CREATE TRIGGER refuse BEFORE INSERT ON notifications BEGIN SELECT RAISE(ABORT, 'no room'); END;")
        try store.database.close()

        let refused = #expect(throws: NodeError.self) {
            _ = try TSPHarness.make(directory: tsp.directory, clock: tsp.clock)
        }
        #expect(
            refused?.description.contains(
                "1 journaled notification(s) could not be stored for delivery at start") == true,
            "\(String(describing: refused))")

        let mended = try Database.open(path: tsp.directory + "/tsp.sqlite")
        try mended.executeScript("DROP TRIGGER refuse;")
        try mended.close()
        let restarted = try TSPHarness.make(directory: tsp.directory, clock: tsp.clock)
        let wallet = TspV1.Notifications.Client(
            TSPHarness.connect(restarted.router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1")))
        #expect(try await wallet.queueStatus(TspV1.QueueStatusRequest()).pending == 1)
    }

    /// The broker failed to take a suspension's CARD_STATE; the resumption that follows must not overtake it, or
    /// the wallet, which applies the state a message carries, would end on SUSPENDED.
    @Test func aMessageTheBrokerCouldNotTakeGoesOutBeforeTheNextOnes() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        tsp.published.fail(true)
        _ = try await wallet.changeTokenState(LifecycleTests.change(id, .suspend))
        #expect(tsp.published.of("CARD_STATE").isEmpty)
        tsp.published.fail(false)
        _ = try await wallet.changeTokenState(LifecycleTests.change(id, .resume))
        let states = tsp.published.of("CARD_STATE").map { publish -> CardV1.TokenState? in
            guard case .cardState(let body) = publish.notification.body else { return nil }
            return body.tokenState
        }
        #expect(states == [.suspended, .active])
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        #expect(try Self.journalRows(database) == 0)
        try database.close()
    }
}
