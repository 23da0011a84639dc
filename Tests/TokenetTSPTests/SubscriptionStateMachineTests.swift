import Foundation
import Testing
import TokenetWire

@testable import TokenetTSP

/// Event → action lists for one subscriber queue.
@Suite struct SubscriptionStateMachineTests {
    typealias Machine = SubscriptionStateMachine

    static func message(_ sequence: UInt64, card: String = "card-1", publishedAtMs: UInt64 = 1_000)
        -> TspV1.Notification
    {
        var notification = TspV1.Notification()
        notification.messageID = "m\(sequence)"
        notification.sequence = sequence
        notification.sender = "CPS"
        notification.cardID = card
        notification.publishedAtMs = publishedAtMs
        return notification
    }

    static func sent(_ sequence: UInt64, attempt: UInt32 = 1) -> TspV1.Notification {
        var notification = message(sequence)
        notification.deliveryAttempt = attempt
        return notification
    }

    static func messages(_ range: ClosedRange<UInt64>) -> [TspV1.Notification] { range.map { message($0) } }

    /// Bodies of `size` bytes, for the queue's byte bound.
    static func sized(_ sequence: UInt64, _ size: Int) -> TspV1.Notification {
        var notification = message(sequence)
        notification.body = .opaque(Data(repeating: 0x41, count: size))
        return notification
    }

    @Test func publishedWithoutStreamIsOnlyQueued() {
        var machine = Machine()
        #expect(machine.published(Self.messages(1...3)) == [])
        #expect(machine.pendingCount == 3)
        #expect(machine.lastSequence == 3)
    }

    @Test func subscribeSendsOldestFirstUpToTheWindow() {
        var machine = Machine()
        _ = machine.published(Self.messages(1...5))
        #expect(
            machine.subscribed(stream: 1, window: 2) == [
                .send(stream: 1, [Self.sent(1), Self.sent(2)]),
                .recordDeliveries(sentThrough: 2, redelivered: []),
            ])
        #expect(machine.inFlightCount == 2)
        // The window is full: new messages wait.
        #expect(machine.published([Self.message(6)]) == [])
    }

    @Test func acknowledgementOpensTheWindowAndDeletes() {
        var machine = Machine()
        _ = machine.published(Self.messages(1...4))
        _ = machine.subscribed(stream: 1, window: 2)
        let ack = machine.acknowledged(["m1"])
        #expect(ack.acknowledged == 1)
        #expect(ack.unknown == 0)
        #expect(
            ack.actions == [
                .delete(sequences: [1]),
                .send(stream: 1, [Self.sent(3)]),
                .recordDeliveries(sentThrough: 3, redelivered: []),
            ])
        #expect(machine.acknowledgedTotal == 1)
        #expect(machine.pendingCount == 3)
    }

    @Test func unknownAndRepeatedIdsAreCountedNotFatal() {
        var machine = Machine()
        _ = machine.published(Self.messages(1...1))
        _ = machine.subscribed(stream: 1, window: 8)
        let ack = machine.acknowledged(["m1", "m1", "nope"])
        #expect(ack.acknowledged == 1)
        #expect(ack.unknown == 2)
        #expect(ack.actions == [.delete(sequences: [1])])
        let again = machine.acknowledged(["m1"])
        #expect(again == Machine.Acknowledgement(acknowledged: 0, unknown: 1, actions: []))
    }

    @Test func replacementEndsTheOldStreamAndResendsWhatWasInFlight() {
        var machine = Machine()
        _ = machine.published(Self.messages(1...3))
        _ = machine.subscribed(stream: 1, window: 2)
        _ = machine.acknowledged(["m1"])  // 2 and 3 now in flight on stream 1
        #expect(
            machine.subscribed(stream: 2, window: 8) == [
                .end(stream: 1, .replaced),
                .send(stream: 2, [Self.sent(2, attempt: 2), Self.sent(3, attempt: 2)]),
                .recordDeliveries(
                    sentThrough: nil, redelivered: [.init(sequence: 2, attempts: 2), .init(sequence: 3, attempts: 2)]),
            ])
        // Stream 1's late disconnection does not close stream 2.
        machine.disconnected(stream: 1)
        #expect(machine.isConnected)
    }

    @Test func disconnectKeepsMessagesForTheNextStream() {
        var machine = Machine()
        _ = machine.published(Self.messages(1...2))
        _ = machine.subscribed(stream: 1, window: 1)
        machine.disconnected(stream: 1)
        #expect(!machine.isConnected)
        #expect(machine.published([Self.message(3)]) == [])
        #expect(
            machine.subscribed(stream: 2, window: 8) == [
                .send(stream: 2, [Self.sent(1, attempt: 2), Self.sent(2), Self.sent(3)]),
                .recordDeliveries(sentThrough: 3, redelivered: [.init(sequence: 1, attempts: 2)]),
            ])
    }

    @Test func restoredQueueCountsEarlierSendsFromTheWatermark() {
        // After a restart: 4 and 5 pending; 4 was sent before (watermark 4), 5 never.
        let restored = [4, 5].map { Machine.Message(notification: Self.message($0), sends: 0, size: 20) }
        var machine = Machine(restoring: restored, lastSequence: 5, sentThrough: 4, acknowledgedTotal: 3)
        #expect(
            machine.subscribed(stream: 7, window: 8) == [
                .send(stream: 7, [Self.sent(4, attempt: 2), Self.sent(5)]),
                .recordDeliveries(sentThrough: 5, redelivered: [.init(sequence: 4, attempts: 2)]),
            ])
        #expect(machine.acknowledgedTotal == 3)
    }

    @Test func acknowledgingAMessageNotYetSentSkipsIt() {
        var machine = Machine()
        _ = machine.published(Self.messages(1...3))
        _ = machine.subscribed(stream: 1, window: 1)
        let ack = machine.acknowledged(["m2", "m1"])
        #expect(ack.acknowledged == 2)
        #expect(
            ack.actions == [
                .delete(sequences: [2, 1]),
                .send(stream: 1, [Self.sent(3)]),
                .recordDeliveries(sentThrough: 3, redelivered: []),
            ])
    }

    @Test func retentionDropsOldMessagesAndTheOldestBeyondTheLimit() {
        var machine = Machine()
        _ = machine.published([
            Self.message(1, publishedAtMs: 1_000), Self.message(2, publishedAtMs: 50_000),
            Self.message(3, publishedAtMs: 60_000), Self.message(4, publishedAtMs: 70_000),
        ])
        let retention = NotificationRetention(maxAge: .seconds(30), maxQueued: 2)
        // At 40 s: message 1 is older than 30 s; of the three left, one more than the limit goes too.
        #expect(machine.expire(nowMs: 40_000, retention: retention) == [.delete(sequences: [1, 2])])
        #expect(machine.expiredTotal == 2)
        #expect(machine.pendingCount == 2)
        #expect(machine.expire(nowMs: 40_000, retention: retention) == [])
        let ack = machine.acknowledged(["m1"])
        #expect(ack.unknown == 1)
    }

    @Test func expiryOfInFlightMessagesOpensTheWindow() {
        var machine = Machine()
        _ = machine.published([Self.message(1, publishedAtMs: 0), Self.message(2, publishedAtMs: 100_000)])
        _ = machine.subscribed(stream: 1, window: 1)
        let retention = NotificationRetention(maxAge: .seconds(60), maxQueued: 10)
        var second = Self.message(2, publishedAtMs: 100_000)
        second.deliveryAttempt = 1
        #expect(
            machine.expire(nowMs: 100_000, retention: retention) == [
                .delete(sequences: [1]),
                .send(stream: 1, [second]),
                .recordDeliveries(sentThrough: 2, redelivered: []),
            ])
    }

    @Test func aLateLowerSequenceIsStillSent() {
        var machine = Machine()
        _ = machine.subscribed(stream: 1, window: 8)
        _ = machine.published([Self.message(2)])
        #expect(
            machine.published([Self.message(1)]) == [
                .send(stream: 1, [Self.sent(1)]),
                .recordDeliveries(sentThrough: nil, redelivered: [.init(sequence: 1, attempts: 1)]),
            ])
    }

    @Test func orderIsKeptPerCardAcrossInterleavedCards() {
        var machine = Machine()
        let cards = ["a", "b", "a", "c", "b", "a"]
        let published = cards.enumerated().map { Self.message(UInt64($0.offset + 1), card: $0.element) }
        _ = machine.published(published)
        guard case .send(_, let sent) = machine.subscribed(stream: 1, window: 100).first else {
            Issue.record("nothing sent")
            return
        }
        for card in Set(cards) {
            let sequences = sent.filter { $0.cardID == card }.map(\.sequence)
            #expect(sequences == sequences.sorted())
        }
        #expect(sent.map(\.sequence) == Array(1...6))
    }

    @Test func retentionDropsTheOldestBeyondTheByteBound() throws {
        var machine = Machine()
        _ = machine.published((1...4).map { Self.sized($0, 1_000) })
        let each = try Self.sized(1, 1_000).serializedBytes().count
        #expect(machine.queuedBytes == 4 * each)
        let retention = NotificationRetention(maxQueued: 100, maxQueuedBytes: 2 * each + 10)
        #expect(machine.exceeds(retention))
        #expect(machine.expire(nowMs: 1_000, retention: retention) == [.delete(sequences: [1, 2])])
        #expect(machine.queuedBytes == 2 * each)
        #expect(!machine.exceeds(retention))
        #expect(machine.expire(nowMs: 1_000, retention: retention) == [])
        // Acknowledged and restored messages count too.
        _ = machine.acknowledged(["m3"])
        #expect(machine.queuedBytes == each)
        let restored = Machine(
            restoring: [Machine.Message(notification: Self.sized(5, 1_000), sends: 0, size: each)], lastSequence: 5)
        #expect(restored.queuedBytes == each)
    }
}

extension SubscriptionStateMachine {
    /// Messages with the sizes of their serialized forms, as the broker hands them over after committing them.
    mutating func published(_ notifications: [TspV1.Notification]) -> [Action] {
        published(notifications.map { ($0, (try? $0.serializedBytes().count) ?? 0) })
    }
}
