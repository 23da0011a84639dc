import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// The broker over its real SQLite store and the Notifications service over in-memory connections.
@Suite struct NotificationBrokerTests {
    @Test func deliversInOrderWithBrokerFieldsAndAcknowledgesDurably() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(3, cards: ["card-a", "card-b"])
        let client = harness.client()
        var stream = try await client.subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        let received = try await stream.take(3)
        #expect(received.map(\.messageID) == ids)
        #expect(received.map(\.sequence) == [1, 2, 3])
        #expect(received.map(\.cardID) == ["card-a", "card-b", "card-a"])
        #expect(received.allSatisfy { $0.deliveryAttempt == 1 && $0.publishedAtMs == harness.clock.now })
        #expect(received.map(\.messageType) == ["CARD_STATE", "CARD_STATE", "CARD_STATE"])

        let ack = try await client.acknowledge(TspV1.AcknowledgeRequest(messageIds: ids))
        #expect(ack.acknowledged == 3)
        #expect(ack.unknown == 0)
        let status = try await client.queueStatus(TspV1.QueueStatusRequest())
        #expect(status.subscriber == "wallet/wallet-1")
        #expect(status.pending == 0)
        #expect(status.inFlight == 0)
        #expect(status.connected)
        #expect(status.lastSequence == 3)
        #expect(status.acknowledgedTotal == 3)
        // The removal is on disk: a restarted broker has nothing left to send.
        let restarted = try harness.reopened()
        #expect(restarted.broker.figures(of: "wallet/wallet-1").pending == 0)
        #expect(restarted.broker.figures(of: "wallet/wallet-1").acknowledgedTotal == 3)
    }

    @Test func publishReachesEveryRecipientOnce() async throws {
        let harness = try BrokerHarness.make()
        let id = try await harness.broker.publish(
            BrokerHarness.notification(card: "card-1"), to: ["wallet/wallet-1", "issuer/bank-a", "wallet/wallet-1"])
        var wallet = try await harness.client().subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        var issuer = try await harness.client(.issuer, "bank-a").subscribe(TspV1.SubscribeRequest())
            .makeAsyncIterator()
        #expect(try await wallet.take(1).map(\.messageID) == [id])
        #expect(try await issuer.take(1).map(\.messageID) == [id])
        #expect(harness.broker.figures(of: "wallet/wallet-1").pending == 1)
        #expect(harness.broker.figures(of: "wallet/wallet-1").lastSequence == 1)
    }

    @Test func reconnectingSubscriberGetsTheUnacknowledgedAgain() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(4)
        let first = harness.client()
        let stream = try await first.subscribe(TspV1.SubscribeRequest())
        var iterator = stream.makeAsyncIterator()
        _ = try await iterator.take(4)
        _ = try await first.acknowledge(TspV1.AcknowledgeRequest(messageIds: Array(ids.prefix(2))))
        stream.cancel()

        var again = try await harness.client().subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        let redelivered = try await again.take(2)
        #expect(redelivered.map(\.messageID) == Array(ids.suffix(2)))
        #expect(redelivered.map(\.deliveryAttempt) == [2, 2])
    }

    @Test func restartedBrokerRedeliversWithTheNextAttempt() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(3)
        let client = harness.client()
        var stream = try await client.subscribe(TspV1.SubscribeRequest(maxInFlight: 2)).makeAsyncIterator()
        _ = try await stream.take(2)
        _ = try await client.acknowledge(TspV1.AcknowledgeRequest(messageIds: [ids[0]]))
        // The window let the third message go too; its send is recorded with a later commit: force one.
        _ = try await stream.take(1)
        harness.broker.commitPending(flushWrittenBehind: true)

        let restarted = try harness.reopened()
        var after = try await restarted.client().subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        let received = try await after.take(2)
        #expect(received.map(\.messageID) == [ids[1], ids[2]])
        #expect(received.map(\.sequence) == [2, 3])
        #expect(received.map(\.deliveryAttempt) == [2, 2])
        // New messages continue the queue's sequence.
        try await restarted.publish(1)
        #expect(try await after.take(1).map(\.sequence) == [4])
    }

    @Test func windowHoldsBackUntilAcknowledged() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(5)
        let client = harness.client()
        var stream = try await client.subscribe(TspV1.SubscribeRequest(maxInFlight: 2)).makeAsyncIterator()
        #expect(try await stream.take(2).map(\.messageID) == Array(ids[0..<2]))
        let held = try await client.queueStatus(TspV1.QueueStatusRequest())
        #expect(held.inFlight == 2)
        #expect(held.pending == 5)
        _ = try await client.acknowledge(TspV1.AcknowledgeRequest(messageIds: [ids[0]]))
        #expect(try await stream.take(1).map(\.messageID) == [ids[2]])
        #expect(try await client.queueStatus(TspV1.QueueStatusRequest()).inFlight == 2)
    }

    @Test func windowIsCappedAndZeroMeansTheDefault() async throws {
        let harness = try BrokerHarness.make()
        try await harness.publish(NotificationBroker.defaultWindow + 5)
        let client = harness.client()
        var stream = try await client.subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        _ = try await stream.take(NotificationBroker.defaultWindow)
        #expect(harness.broker.figures(of: "wallet/wallet-1").inFlight == NotificationBroker.defaultWindow)
    }

    @Test func aNewSubscribeReplacesTheOldStream() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(2)
        var old = try await harness.client().subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        _ = try await old.take(2)
        var new = try await harness.client().subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        await expectRPCError(.aborted, "replaced") { _ = try await old.next() }
        let resent = try await new.take(2)
        #expect(resent.map(\.messageID) == ids)
        #expect(resent.map(\.deliveryAttempt) == [2, 2])
        #expect(harness.broker.figures(of: "wallet/wallet-1").connected)
    }

    @Test func retentionDropsBeyondTheLimitAndByAge() async throws {
        let harness = try BrokerHarness.make(retention: NotificationRetention(maxAge: .seconds(60), maxQueued: 3))
        let ids = try await harness.publish(5)
        let client = harness.client()
        var status = try await client.queueStatus(TspV1.QueueStatusRequest())
        #expect(status.pending == 3)
        #expect(status.expiredTotal == 2)
        let ack = try await client.acknowledge(TspV1.AcknowledgeRequest(messageIds: [ids[0], ids[1], ids[2]]))
        #expect(ack.acknowledged == 1)
        #expect(ack.unknown == 2)

        harness.clock.advance(seconds: 61)
        try await harness.publish(1)
        harness.broker.expireNow()
        status = try await client.queueStatus(TspV1.QueueStatusRequest())
        #expect(status.pending == 1)
        #expect(status.expiredTotal == 4)
        // What is left is only the fresh message.
        var stream = try await client.subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        #expect(try await stream.take(1).map(\.sequence) == [6])
    }

    /// The age limit is applied on the commit thread's one-second tick also while publishes keep waking it: under
    /// a publish every 200 ms the tick never came, and nothing was ever dropped for its age.
    @Test(.timeLimit(.minutes(3))) func messagesExpireByAgeWhilePublishesKeepComing() async throws {
        let harness = try BrokerHarness.make(retention: NotificationRetention(maxAge: .seconds(60), maxQueued: 100))
        try await harness.publish(3)
        harness.clock.advance(seconds: 61)
        var expired = false
        let started = ContinuousClock.now
        while !expired, ContinuousClock.now - started < .seconds(60) {
            try await harness.publish(1, to: ["wallet/wallet-2"])
            try await Task.sleep(for: .milliseconds(200))
            expired = harness.broker.figures(of: "wallet/wallet-1").pending == 0
        }
        #expect(expired, "the old messages were still queued after a minute of publishes")
    }

    /// A publish once the broker has stopped (the TSP stopping) is told UNAVAILABLE, to try again once it is back.
    @Test func aPublishAfterTheShutdownIsUnavailable() async throws {
        let harness = try BrokerHarness.make()
        harness.broker.shutDown()
        do {
            try await harness.publish(1)
            Issue.record("the publish was taken")
        } catch let error as TSPError {
            #expect(error.code == .unavailable, "\(error)")
            #expect(error.message.contains("the TSP is stopping"), "\(error)")
        }
    }

    /// Large messages to a subscriber that reads nothing are bounded by bytes, not only by count: the oldest go as
    /// soon as the queue holds more, so the broker's memory stays bounded whatever one publisher sends.
    @Test func retentionDropsTheOldestBeyondTheByteBound() async throws {
        let harness = try BrokerHarness.make(
            retention: NotificationRetention(maxQueued: 1_000, maxQueuedBytes: 3 * 40_000))
        var ids: [String] = []
        for index in 0..<10 {
            var notification = BrokerHarness.notification(card: "card-1")
            notification.body = .opaque(Data(repeating: UInt8(index), count: 39_000))
            ids.append(try await harness.broker.publish(notification, to: ["wallet/wallet-1"]))
        }
        let status = try await harness.client().queueStatus(TspV1.QueueStatusRequest())
        #expect(status.pending == 3)
        #expect(status.expiredTotal == 7)
        // What is left is the newest three.
        var stream = try await harness.client().subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        #expect(try await stream.take(3).map(\.messageID) == Array(ids.suffix(3)))
    }

    @Test func retentionComesFromThePolicyFile() throws {
        let directory = try TSPHarness.temporaryDirectory()
        let file = URL(fileURLWithPath: directory + "/" + TSPConfiguration.fileName)
        try Data(
            #"{"notification_max_age_s": 3600, "notification_max_queued": 500, "notification_max_queued_bytes": 1048576}"#
                .utf8
        ).write(to: file)
        let retention = try TSPConfiguration.load(dataDirectory: directory).notificationRetention
        #expect(
            retention == NotificationRetention(maxAge: .seconds(3600), maxQueued: 500, maxQueuedBytes: 1_048_576))
        try Data(#"{"notification_max_queued": 0}"#.utf8).write(to: file)
        #expect(throws: NodeError.self) { try TSPConfiguration.load(dataDirectory: directory) }
        // Less than one message of the largest size the broker takes.
        try Data(#"{"notification_max_queued_bytes": 1000}"#.utf8).write(to: file)
        #expect(throws: NodeError.self) { try TSPConfiguration.load(dataDirectory: directory) }
        #expect(TSPConfiguration().notificationRetention == NotificationRetention())
    }

    @Test func unknownIdsAreCountedAndTooManyAreRefused() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(1)
        let client = harness.client()
        let ack = try await client.acknowledge(TspV1.AcknowledgeRequest(messageIds: ["nope", ids[0], ids[0]]))
        #expect(ack.acknowledged == 1)
        #expect(ack.unknown == 2)
        // Another subscriber cannot acknowledge someone else's message.
        let other = try await harness.client(.wallet, "wallet-2").acknowledge(
            TspV1.AcknowledgeRequest(messageIds: ids))
        #expect(other.unknown == 1)
        let tooMany = (0...NotificationBroker.maximumAcknowledgeBatch).map { "id-\($0)" }
        await expectRPCError(.invalidArgument, "at most") {
            try await client.acknowledge(TspV1.AcknowledgeRequest(messageIds: tooMany))
        }
    }

    @Test func rolesWithoutAQueueAreRefused() async throws {
        let harness = try BrokerHarness.make()
        for role in [PeerRole.operator, .tsp] {
            let client = harness.client(role, "x-1")
            await expectRPCError(.permissionDenied, "may not call") {
                var stream = try await client.subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
                _ = try await stream.next()
            }
            await expectRPCError(.permissionDenied, "may not call") {
                try await client.acknowledge(TspV1.AcknowledgeRequest(messageIds: ["a"]))
            }
        }
        await expectRPCError(.permissionDenied, "its own queue") {
            try await harness.client().queueStatus(TspV1.QueueStatusRequest(subscriber: "wallet/wallet-2"))
        }
        let operatorClient = harness.client(.operator, "op-1")
        await expectRPCError(.invalidArgument, "name the queue") {
            try await operatorClient.queueStatus(TspV1.QueueStatusRequest())
        }
        try await harness.publish(2)
        let status = try await operatorClient.queueStatus(TspV1.QueueStatusRequest(subscriber: "wallet/wallet-1"))
        #expect(status.pending == 2)
    }

    /// An operator who names a queue the broker does not hold (a mistyped node id) is told so, rather than shown
    /// an empty, disconnected queue that looks like a wallet with nothing waiting.
    @Test func anOperatorNamingAnUnknownQueueIsToldItIsUnknown() async throws {
        let harness = try BrokerHarness.make()
        try await harness.publish(1)
        let operatorClient = harness.client(.operator, "op-1")
        await expectRPCError(.notFound, "no queue \"wallet/walet-1\"") {
            try await operatorClient.queueStatus(TspV1.QueueStatusRequest(subscriber: "wallet/walet-1"))
        }
        // A subscriber's own queue is answered even before anything reached it.
        #expect(try await harness.client(.wallet, "wallet-9").queueStatus(TspV1.QueueStatusRequest()).pending == 0)
        // Known queues survive a restart of the TSP, with nothing pending.
        var stream = try await harness.client().subscribe(TspV1.SubscribeRequest()).makeAsyncIterator()
        let delivered = try await stream.take(1)
        _ = try await harness.client().acknowledge(TspV1.AcknowledgeRequest(messageIds: delivered.map(\.messageID)))
        let restarted = try harness.reopened()
        let status = try await restarted.client(.operator, "op-1").queueStatus(
            TspV1.QueueStatusRequest(subscriber: "wallet/wallet-1"))
        #expect(status.pending == 0 && status.acknowledgedTotal == 1)
    }

    @Test func operatorsPublishOthersMayNot() async throws {
        let harness = try BrokerHarness.make()
        let request = TspV1.PublishRequest(
            notification: BrokerHarness.notification(card: "card-1"), subscribers: ["issuer/bank-a"])
        await expectRPCError(.permissionDenied, "may not call") { try await harness.client().publish(request) }
        let operatorClient = harness.client(.operator, "op-1")
        await expectRPCError(.invalidArgument, "notification is required") {
            try await operatorClient.publish(TspV1.PublishRequest(subscribers: ["issuer/bank-a"]))
        }
        await expectRPCError(.invalidArgument, "only wallet and issuer") {
            try await operatorClient.publish(
                TspV1.PublishRequest(notification: request.notification, subscribers: ["operator/op-1"]))
        }
        // At most 1,000 queues a message; 60,000 were taken and logged on one line of 800 KB.
        await expectRPCError(.invalidArgument, "a message goes to at most 1000 subscribers, not 1001") {
            try await operatorClient.publish(
                TspV1.PublishRequest(
                    notification: request.notification, subscribers: (0...1_000).map { "wallet/w\($0)" }))
        }
        await expectRPCError(.invalidArgument, "subscribers names \"issuer/bank-a\" more than once") {
            try await operatorClient.publish(
                TspV1.PublishRequest(
                    notification: request.notification, subscribers: ["issuer/bank-a", "wallet/w1", "issuer/bank-a"]))
        }
        let id = try await operatorClient.publish(request).messageID
        var stream = try await harness.client(.issuer, "bank-a").subscribe(TspV1.SubscribeRequest())
            .makeAsyncIterator()
        #expect(try await stream.take(1).map(\.messageID) == [id])
    }

    /// An operator's message is held to the rules of the TSP's own: no card number in any of its text (the parties
    /// store and show it), and a payment's amount, currency and times as a payment would have them. Nothing refused
    /// reaches a queue.
    @Test func anOperatorsMessageIsHeldToTheRulesOfTheTSPsOwn() async throws {
        let harness = try BrokerHarness.make()
        let operatorClient = harness.client(.operator, "op-1")
        let payment = TspV1.TransactionBody(
            transactionID: "txn-1", amountMinor: 1_250, currency: "EUR", merchant: "Cafe", approved: true,
            transactionAtMs: 1_764_647_000_000)
        func publishing(_ change: (inout TspV1.Notification) -> Void) -> TspV1.PublishRequest {
            var notification = BrokerHarness.notification(card: "DWSPMC" + String(repeating: "0a", count: 16))
            notification.messageType = "TRANSACTION_NOTIFICATION"
            notification.body = .transaction(payment)
            change(&notification)
            return TspV1.PublishRequest(notification: notification, subscribers: ["wallet/wallet-1"])
        }
        let refusals: [(String, (inout TspV1.Notification) -> Void)] = [
            (
                "notification.transaction.merchant holds what reads as a card number",
                {
                    $0.body = .transaction(.init(amountMinor: 5, currency: "EUR", merchant: "Shop 4111 1111 1111 1111"))
                }
            ),
            ("notification.card_id holds what reads as a card number", { $0.cardID = "5555555555554444" }),
            (
                "notification.messaging.body holds what reads as a card number",
                {
                    $0.body = .messaging(.init(title: "Hi", body: "your card 4111111111111111 is ready"))
                }
            ),
            (
                "notification.opaque holds what reads as a card number",
                {
                    $0.body = .opaque(Data("pan=4111111111111111".utf8))
                }
            ),
            (
                "notification.transaction.amount_minor is -9223372036854775808; a payment is positive",
                {
                    $0.body = .transaction(.init(amountMinor: .min, currency: "EUR", merchant: "Cafe"))
                }
            ),
            (
                "notification.authn.amount_minor is 1000000000000",
                {
                    $0.body = .authn(.init(amountMinor: 1_000_000_000_000, currency: "EUR", merchant: "Cafe"))
                }
            ),
            (
                "notification.transaction.currency must be an ISO 4217 code",
                {
                    $0.body = .transaction(.init(amountMinor: 5, currency: "ZZZ", merchant: "Cafe"))
                }
            ),
            (
                "notification.transaction.merchant is at most 100 characters",
                {
                    $0.body = .transaction(
                        .init(amountMinor: 5, currency: "EUR", merchant: String(repeating: "m", count: 101)))
                }
            ),
            (
                "notification.transaction.transaction_at_ms is 18446744073709551615, after the year 9999",
                {
                    $0.body = .transaction(
                        .init(amountMinor: 5, currency: "EUR", merchant: "Cafe", transactionAtMs: .max))
                }
            ),
        ]
        for (message, change) in refusals {
            await expectRPCError(.invalidArgument, message) { try await operatorClient.publish(publishing(change)) }
        }
        #expect(harness.broker.figures(of: "wallet/wallet-1").lastSequence == 0)
        // A Mastercard token id, a time in milliseconds and the last four digits are no card numbers.
        _ = try await operatorClient.publish(publishing { _ in })
        _ = try await operatorClient.publish(
            publishing { $0.body = .messaging(.init(title: "Card ending 4444", body: "since 1764647000000")) })
        #expect(harness.broker.figures(of: "wallet/wallet-1").lastSequence == 2)
    }

    @Test func publishRefusesBadRecipientsAndMessages() async throws {
        let harness = try BrokerHarness.make()
        let message = BrokerHarness.notification(card: "card-1")
        for recipients in [[], ["wallet"], ["tsp/tsp-1"], ["operator/op"], ["wallet/has space"]] {
            await #expect(throws: TSPError.self) { try await harness.broker.publish(message, to: recipients) }
        }
        var anonymous = message
        anonymous.sender = ""
        await #expect(throws: TSPError.self) { try await harness.broker.publish(anonymous, to: ["wallet/w-1"]) }
        var huge = message
        huge.body = .opaque(Data(repeating: 7, count: NotificationBroker.maximumMessageBytes))
        await #expect(throws: TSPError.self) { try await harness.broker.publish(huge, to: ["wallet/w-1"]) }
        #expect(harness.broker.figures(of: "wallet/w-1").lastSequence == 0)
    }

    @Test func concurrentPublishersShareCommitsAndKeepPerCardOrder() async throws {
        let harness = try BrokerHarness.make()
        let cards = ["card-a", "card-b", "card-c", "card-d"]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for card in cards {
                group.addTask { try await harness.publish(50, cards: [card]) }
            }
            try await group.waitForAll()
        }
        var stream = try await harness.client().subscribe(TspV1.SubscribeRequest(maxInFlight: 1000))
            .makeAsyncIterator()
        let received = try await stream.take(200)
        #expect(received.map(\.sequence) == Array(1...200))
        for card in cards {
            let notes = received.filter { $0.cardID == card }.compactMap { notification -> Int? in
                guard case .messaging(let body) = notification.body else { return nil }
                return Int(body.title)
            }
            #expect(notes == Array(0..<50))
        }
    }
}
