import Foundation
import Synchronization
import Testing
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetNode
@testable import TokenetTSP

/// The nodes' subscriber runtime against the real broker over in-memory connections.
@Suite struct NotificationSubscriberTests {
    /// Records what it handles and lets a test wait for a number of messages.
    final class CountingHandler: NotificationHandler {
        private let state = Mutex<(received: [TspV1.Notification], waiters: [(Int, CheckedContinuation<Void, Never>)])>(
            ([], []))

        var received: [TspV1.Notification] { state.withLock { $0.received } }

        func handle(_ notification: TspV1.Notification) async {
            let ready = state.withLock { state in
                state.received.append(notification)
                let count = state.received.count
                let ready = state.waiters.filter { $0.0 <= count }.map(\.1)
                state.waiters.removeAll { $0.0 <= count }
                return ready
            }
            for waiter in ready { waiter.resume() }
        }

        /// Returns once `count` messages were handled.
        func wait(for count: Int) async {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state in
                    guard state.received.count < count else { return true }
                    state.waiters.append((count, continuation))
                    return false
                }
                if done { continuation.resume() }
            }
        }
    }

    /// Forwards every call to `base`, running a test's hooks around them by method path: before and after a unary
    /// call (to fail it, or lose or hold back its answer once the broker acted on it), before a server-streaming
    /// one (to refuse a Subscribe as an unreachable TSP would) and after it opened (to act while the broker's
    /// messages are on their way and none was read).
    struct InterceptingCaller: RPCCaller {
        let base: any RPCCaller
        var beforeUnary: @Sendable (String) async throws -> Void = { _ in }
        var afterUnary: @Sendable (String) async throws -> Void = { _ in }
        var beforeStream: @Sendable (String) async throws -> Void = { _ in }
        var afterStream: @Sendable (String) async throws -> Void = { _ in }

        func unary<Request, Response>(
            _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
        ) async throws -> Response {
            try await beforeUnary(method.path)
            let response = try await base.unary(method, request, options: options)
            try await afterUnary(method.path)
            return response
        }

        func serverStreaming<Request, Response>(
            _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
        ) async throws -> ResponseStream<Response> {
            try await beforeStream(method.path)
            let stream = try await base.serverStreaming(method, request, options: options)
            try await afterStream(method.path)
            return stream
        }

        func clientStreaming<Request, Response>(
            _ method: MethodDescriptor<Request, Response>, options: CallOptions,
            requests: @Sendable (RequestWriter<Request>) async throws -> Void
        ) async throws -> Response {
            try await base.clientStreaming(method, options: options, requests: requests)
        }

        func bidirectional<Request, Response>(
            _ method: MethodDescriptor<Request, Response>, options: CallOptions
        ) async throws -> (requests: RequestWriter<Request>, responses: ResponseStream<Response>) {
            try await base.bidirectional(method, options: options)
        }
    }

    static let acknowledge = TspV1.Notifications.acknowledge.path

    /// The waits a subscriber asked its `sleep` for, in order.
    final class WaitLog: Sendable {
        private let waits = Mutex<[Duration]>([])

        /// Records `delay`; returns how many waits there have been, this one included.
        func record(_ delay: Duration) -> Int {
            waits.withLock { waits in
                waits.append(delay)
                return waits.count
            }
        }

        var all: [Duration] { waits.withLock { $0 } }
    }

    /// Every Acknowledge fails as if the TSP went away before answering.
    static func losingAcknowledgements(_ base: any RPCCaller) -> InterceptingCaller {
        InterceptingCaller(base: base) { path in
            if path == acknowledge { throw RPCError(.unavailable, "the connection to the TSP was lost") }
        }
    }

    /// The first Acknowledge's answer is lost: the broker removed the messages, the subscriber does not know it (a
    /// timeout on a loaded machine, a connection lost before the answer).
    static func losingFirstAcknowledgementAnswer(_ base: any RPCCaller) -> InterceptingCaller {
        let lost = Mutex(false)
        return InterceptingCaller(
            base: base,
            afterUnary: { path in
                let loseThisOne = lost.withLock { lost in
                    guard path == acknowledge, !lost else { return false }
                    lost = true
                    return true
                }
                if loseThisOne { throw RPCError(.deadlineExceeded, "the answer did not arrive in time") }
            })
    }

    /// An Acknowledge reaches the broker, but its answer never comes back before the node stops (the call waits
    /// until cancelled): the broker removed the messages, the node does not know it.
    static func acknowledgementAnswersNeverArrive(_ base: any RPCCaller) -> InterceptingCaller {
        InterceptingCaller(
            base: base,
            afterUnary: { path in
                if path == acknowledge { try await Task.sleep(for: .seconds(3600)) }
            })
    }

    static func caller(_ harness: BrokerHarness) -> any RPCCaller {
        TSPHarness.connect(harness.router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1"))
    }

    static func subscriber(
        _ caller: any RPCCaller, _ handler: any NotificationHandler, journal: String, window: UInt32 = 256
    ) throws -> NotificationSubscriber {
        subscriber(caller, handler, processed: try ProcessedNotificationLog(path: journal), window: window)
    }

    static func subscriber(
        _ caller: any RPCCaller, _ handler: any NotificationHandler, processed: ProcessedNotificationLog,
        window: UInt32 = 256
    ) -> NotificationSubscriber {
        NotificationSubscriber(
            tsp: caller, handler: handler, processed: processed,
            logger: Logger(node: "wallet-node", sink: MemoryLogSink()),
            options: .init(maxInFlight: window, acknowledgeBatch: 7))
    }

    /// Waits until the broker holds nothing for wallet-1.
    static func drained(_ harness: BrokerHarness) async throws {
        try #require(await eventually { harness.broker.figures(of: "wallet/wallet-1").pending == 0 })
    }

    /// Whether `condition` holds within four minutes (a bound for a stuck test, not a timing expectation: a full
    /// parallel test run on two cores can hold a test back for minutes).
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(240)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    @Test func handlesEachMessageOnceInOrderAndAcknowledgesAll() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(40, cards: ["card-a", "card-b", "card-c"])
        let handler = CountingHandler()
        let journal = harness.directory + "/wallet-journal.log"
        // A small window: the stream must keep moving through many acknowledgements.
        let subscriber = try Self.subscriber(Self.caller(harness), handler, journal: journal, window: 4)
        let running = Task { await subscriber.run() }
        await handler.wait(for: 40)
        try await Self.drained(harness)
        // Confirmed acknowledgements leave the journal.
        #expect(await Self.eventually { subscriber.processed.count == 0 })
        running.cancel()
        #expect(handler.received.map(\.messageID) == ids)
        #expect(harness.broker.figures(of: "wallet/wallet-1").acknowledgedTotal == 40)
    }

    /// Messages the broker's retention dropped while the node was away are told in the node's log by the gap in
    /// the sequences it is sent next, also across a restart of the node (the journal keeps the highest sequence
    /// handled); a subscriber that missed nothing says nothing.
    @Test func messagesDroppedWhileTheNodeWasAwayAreToldByTheGap() async throws {
        let harness = try BrokerHarness.make(retention: NotificationRetention(maxAge: .seconds(3600), maxQueued: 3))
        let journal = harness.directory + "/wallet-journal.log"
        let handler = CountingHandler()
        let quiet = MemoryLogSink()
        let first = NotificationSubscriber(
            tsp: Self.caller(harness), handler: handler, processed: try ProcessedNotificationLog(path: journal),
            logger: Logger(node: "wallet-node", sink: quiet), options: .init(maxInFlight: 256, acknowledgeBatch: 7))
        _ = try await harness.publish(2)
        let running = Task { await first.run() }
        await handler.wait(for: 2)
        try await Self.drained(harness)
        running.cancel()
        _ = await running.value
        #expect(!quiet.lines.contains { $0.contains("notifications lost") }, "\(quiet.lines)")

        // Away: eight more are published to a queue that keeps three.
        _ = try await harness.publish(8)
        harness.broker.expireNow()
        let logs = MemoryLogSink()
        let again = NotificationSubscriber(
            tsp: Self.caller(harness), handler: handler, processed: try ProcessedNotificationLog(path: journal),
            logger: Logger(node: "wallet-node", sink: logs), options: .init(maxInFlight: 256, acknowledgeBatch: 7))
        let back = Task { await again.run() }
        await handler.wait(for: 5)
        back.cancel()
        _ = await back.value
        let lost = logs.lines.filter { $0.contains("notifications lost") }
        #expect(
            lost.count == 1 && lost[0].contains("5 message(s) of this node's queue at the TSP never came")
                && lost[0].contains("sequences=3-7"),
            "\(logs.lines)")
    }

    /// A journal whose highest sequence is the largest there is (a TSP that sent it; Tokenet's never does) is no
    /// trap: the next message is handled. Adding one to it trapped the node on every message after each restart.
    @Test func aJournalAtTheLargestSequenceIsNoTrap() async throws {
        let harness = try BrokerHarness.make()
        let journal = harness.directory + "/wallet-journal.log"
        try "=\(UInt64.max)\n".write(toFile: journal, atomically: true, encoding: .utf8)
        #expect(try ProcessedNotificationLog(path: journal).highestSequence == UInt64.max)
        let handler = CountingHandler()
        let subscriber = try Self.subscriber(Self.caller(harness), handler, journal: journal)
        _ = try await harness.publish(1)
        let running = Task { await subscriber.run() }
        await handler.wait(for: 1)
        running.cancel()
        _ = await running.value
        #expect(handler.received.count == 1)
    }

    /// A message published while a flow is served carries its trace id (the broker fills it in, whatever the
    /// publisher put there), and the receiving node handles it under that trace: the lines its handling logs and
    /// the calls it makes carry it. One published outside any flow is handled under none.
    @Test func aMessageIsHandledUnderTheTraceOfTheFlowThatPublishedIt() async throws {
        final class TraceRecorder: NotificationHandler {
            let traces = Mutex<[String?]>([])
            func handle(_ notification: TspV1.Notification) async {
                traces.withLock { $0.append(FlowTrace.active) }
            }
        }
        let harness = try BrokerHarness.make()
        var claimed = BrokerHarness.notification(card: "card-a", note: "0")
        claimed.traceID = "0000000000000000"
        try await FlowTrace.run("0123456789abcdef") {
            _ = try await harness.broker.publish(claimed, to: ["wallet/wallet-1"])
        }
        _ = try await harness.publish(1, cards: ["card-a"])
        let handler = TraceRecorder()
        let subscriber = try Self.subscriber(
            Self.caller(harness), handler, journal: harness.directory + "/wallet-journal.log")
        let running = Task { await subscriber.run() }
        #expect(await Self.eventually { handler.traces.withLock { $0.count } == 2 })
        running.cancel()
        #expect(handler.traces.withLock { $0 } == ["0123456789abcdef", nil])
    }

    /// A message's acknowledgement is sent under the trace of the flow that published it, so that the TSP's line for
    /// the Acknowledge call reads as part of that flow.
    @Test func aMessageIsAcknowledgedUnderTheTraceOfItsFlow() async throws {
        let harness = try BrokerHarness.make()
        try await FlowTrace.run("0123456789abcdef") {
            _ = try await harness.broker.publish(
                BrokerHarness.notification(card: "card-a", note: "0"), to: ["wallet/wallet-1"])
        }
        let traces = Mutex<[String?]>([])
        let caller = InterceptingCaller(base: Self.caller(harness)) { path in
            if path == Self.acknowledge { traces.withLock { $0.append(FlowTrace.active) } }
        }
        let handler = CountingHandler()
        let subscriber = try Self.subscriber(caller, handler, journal: harness.directory + "/wallet-journal.log")
        let running = Task { await subscriber.run() }
        await handler.wait(for: 1)
        try await Self.drained(harness)
        running.cancel()
        #expect(traces.withLock { $0 } == ["0123456789abcdef"])
    }

    /// A batch is acknowledged under the trace its messages share, and under none when they share none.
    @Test func aBatchSharesATraceOnlyWhenAllItsMessagesDo() {
        typealias Pending = AcknowledgementQueue.Pending
        let one = [Pending(id: "a", traceID: "0123456789abcdef"), Pending(id: "b", traceID: "0123456789abcdef")]
        let mixed = [Pending(id: "a", traceID: "0123456789abcdef"), Pending(id: "b", traceID: "fedcba9876543210")]
        let partly = [Pending(id: "a", traceID: "0123456789abcdef"), Pending(id: "b", traceID: "")]
        #expect(AcknowledgementQueue.sharedTrace(of: one) == "0123456789abcdef")
        #expect(AcknowledgementQueue.sharedTrace(of: mixed) == "")
        #expect(AcknowledgementQueue.sharedTrace(of: partly) == "")
        #expect(AcknowledgementQueue.sharedTrace(of: []) == "")
    }

    @Test func restartBetweenHandlingAndAcknowledgingDoesNotHandleTwice() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(30, cards: ["card-a", "card-b", "card-c"])
        let journal = harness.directory + "/wallet-journal.log"

        // First life: every message is handled, but no acknowledgement reaches the TSP before the node stops.
        let first = CountingHandler()
        let lost = Self.losingAcknowledgements(Self.caller(harness))
        let doomed = try Self.subscriber(lost, first, journal: journal)
        let firstLife = Task { await doomed.run() }
        await first.wait(for: 30)
        firstLife.cancel()
        await firstLife.value
        #expect(harness.broker.figures(of: "wallet/wallet-1").pending == 30)

        // Second life, with the journal read back from disk: the redelivered messages are acknowledged only.
        let second = CountingHandler()
        let subscriber = try Self.subscriber(Self.caller(harness), second, journal: journal)
        let secondLife = Task { await subscriber.run() }
        try await Self.drained(harness)
        try await harness.publish(1, cards: ["card-a"])
        await second.wait(for: 1)
        try await Self.drained(harness)
        secondLife.cancel()

        #expect(first.received.map(\.messageID) == ids)
        #expect(second.received.count == 1)
        #expect(second.received.first?.sequence == 31)
        #expect(harness.broker.figures(of: "wallet/wallet-1").acknowledgedTotal == 31)
        for card in ["card-a", "card-b", "card-c"] {
            let sequences = (first.received + second.received).filter { $0.cardID == card }.map(\.sequence)
            #expect(sequences == sequences.sorted())
        }
    }

    /// A new stream acknowledges the journal's ids first thing, while the broker sends those same messages again on
    /// it. On a loaded machine that acknowledgement can be confirmed, and the journal forget the ids, before the
    /// subscriber reads the copies: they must still not be handled again.
    @Test func copiesReadAfterTheirAcknowledgementWasConfirmedAreNotHandledAgain() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(10, cards: ["card-a", "card-b"])
        let journal = harness.directory + "/wallet-journal.log"
        let first = CountingHandler()
        let doomed = try Self.subscriber(Self.losingAcknowledgements(Self.caller(harness)), first, journal: journal)
        let firstLife = Task { await doomed.run() }
        await first.wait(for: 10)
        firstLife.cancel()
        await firstLife.value

        // Second life: once the copies are in flight and before any is read, their acknowledgement goes through
        // and is confirmed, as the subscriber's own can be when its reading falls behind.
        let processed = try ProcessedNotificationLog(path: journal)
        #expect(processed.count == 10)
        let base = Self.caller(harness)
        /// 0: not yet; 1: under way; 2: done.
        let overtaking = Mutex(0)
        let caller = InterceptingCaller(
            base: base,
            afterStream: { _ in
                let isFirst = overtaking.withLock { stage in
                    defer { stage = max(stage, 1) }
                    return stage == 0
                }
                guard isFirst else { return }
                try #require(await Self.eventually { harness.broker.figures(of: "wallet/wallet-1").inFlight == 10 })
                _ = try await TspV1.Notifications.Client(base).acknowledge(TspV1.AcknowledgeRequest(messageIds: ids))
                processed.forget(ids)
                overtaking.withLock { $0 = 2 }
            })
        let second = CountingHandler()
        let subscriber = Self.subscriber(caller, second, processed: processed)
        let secondLife = Task { await subscriber.run() }
        #expect(await Self.eventually { overtaking.withLock { $0 } == 2 })
        let more = try await harness.publish(1, cards: ["card-a"])
        await second.wait(for: 1)
        try await Self.drained(harness)
        secondLife.cancel()
        await secondLife.value

        #expect(first.received.map(\.messageID) == ids)
        #expect(second.received.map(\.messageID) == more)
    }

    @Test func disconnectedSubscriberReconnectsAndGetsTheRest() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(10)
        let handler = CountingHandler()
        let journal = harness.directory + "/wallet-journal.log"
        let before = try Self.subscriber(Self.caller(harness), handler, journal: journal)
        let firstLife = Task { await before.run() }
        await handler.wait(for: 10)
        firstLife.cancel()
        await firstLife.value
        let more = try await harness.publish(10)
        let after = try Self.subscriber(Self.caller(harness), handler, journal: journal)
        let secondLife = Task { await after.run() }
        await handler.wait(for: 20)
        try await Self.drained(harness)
        secondLife.cancel()
        #expect(handler.received.map(\.messageID) == ids + more)
    }

    /// Fails its first handling of one message, as a wallet whose TSP call for new keys found the TSP away.
    final class FailingOnceHandler: NotificationHandler {
        struct Unavailable: Error {}
        let failing: String
        let base = CountingHandler()
        private let failed = Mutex(false)

        init(failing: String) { self.failing = failing }

        func handle(_ notification: TspV1.Notification) async throws {
            if notification.messageID == failing, !failed.withLock({ $0 }) {
                failed.withLock { $0 = true }
                throw Unavailable()
            }
            await base.handle(notification)
        }
    }

    @Test func aMessageWhoseHandlingFailedIsDeliveredAgainAndHandledOnceInOrder() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(6, cards: ["card-a"])
        let handler = FailingOnceHandler(failing: ids[2])
        let journal = harness.directory + "/wallet-journal.log"
        let subscriber = try Self.subscriber(Self.caller(harness), handler, journal: journal)
        let running = Task { await subscriber.run() }
        await handler.base.wait(for: 6)
        try await Self.drained(harness)
        running.cancel()
        // Each message handled once, in queue order; the failed one on its second delivery.
        #expect(handler.base.received.map(\.messageID) == ids)
        #expect(handler.base.received[2].deliveryAttempt == 2)
        #expect(harness.broker.figures(of: "wallet/wallet-1").acknowledgedTotal == 6)
    }

    /// Options whose backoff doubles from 1 ms without jitter, so that the waits a test records are exact.
    static let doublingFromOneMillisecond = NotificationSubscriber.Options(
        backoff: RPCChannel.Backoff(initial: .milliseconds(1), maximum: .seconds(1), multiplier: 2, jitter: 0))

    /// Acknowledgements that keep failing (a TSP whose disk is full) are tried again after growing waits, with one
    /// warning for the run of failures: the waits stayed at the initial backoff, each with a warning line.
    @Test func acknowledgementsThatKeepFailingAreRetriedWithGrowingWaitsAndOneWarning() async throws {
        let harness = try BrokerHarness.make()
        try await harness.publish(3)
        let waits = WaitLog()
        let logs = MemoryLogSink()
        let subscriber = NotificationSubscriber(
            tsp: Self.losingAcknowledgements(Self.caller(harness)), handler: CountingHandler(),
            processed: try ProcessedNotificationLog(path: harness.directory + "/wallet-journal.log"),
            logger: Logger(node: "wallet-node", sink: logs),
            options: Self.doublingFromOneMillisecond,
            sleep: { delay in
                let count = waits.record(delay)
                // The fifth wait lasts until the test ends the subscriber.
                if count >= 5 { try await Task.sleep(for: .seconds(3600)) }
            })
        let running = Task { await subscriber.run() }
        #expect(await Self.eventually { waits.all.count >= 5 })
        running.cancel()
        await running.value
        #expect(Array(waits.all.prefix(5)) == [1, 2, 4, 8, 16].map { Duration.milliseconds($0) })
        let warnings = logs.lines.filter { $0.contains("acknowledging notifications failed") && $0.contains("warning") }
        #expect(warnings.count == 1, "\(logs.lines)")
    }

    /// A stream that ends cleanly while an acknowledgement waits out its backoff (up to 10 s) ends at once: the ids
    /// are acknowledged first thing on the next stream, which the wait held back that long. (A stream that fails
    /// cancels the wait anyway.)
    @Test(.timeLimit(.minutes(5))) func aStreamEndsWithoutWaitingOutAnAcknowledgementsBackoff() async throws {
        let harness = try BrokerHarness.make()
        var router = RPCRouter()
        // A TSP that sends one message and ends the stream cleanly, and whose acknowledgements all fail.
        router.serverStreaming(TspV1.Notifications.subscribe) { _, writer, _ in
            try await writer.send(TspV1.Notification(messageID: "message-1", sequence: 1))
        }
        router.unary(TspV1.Notifications.acknowledge) { _, _ in
            throw RPCError(.unavailable, "the broker cannot commit now (test)")
        }
        let waits = WaitLog()
        let handler = CountingHandler()
        let subscriber = NotificationSubscriber(
            tsp: TSPHarness.connect(router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1")), handler: handler,
            processed: try ProcessedNotificationLog(path: harness.directory + "/wallet-journal.log"),
            logger: Logger(node: "wallet-node", sink: MemoryLogSink()),
            options: Self.doublingFromOneMillisecond,
            sleep: { delay in
                let count = waits.record(delay)
                // The acknowledgement's backoff lasts an hour; the subscriber's own, after the stream, ends the test.
                if count == 1 { try await Task.sleep(for: .seconds(3600)) } else { throw CancellationError() }
            })
        let running = Task { await subscriber.run() }
        #expect(await Self.eventually { waits.all.count >= 2 }, "the stream's end waited for the backoff")
        running.cancel()
        await running.value
        #expect(handler.received.map(\.messageID) == ["message-1"])
    }

    /// An acknowledgement whose answer was lost is sent again on the same stream, so the journal forgets the ids
    /// instead of keeping them forever.
    @Test func anAcknowledgementWhoseAnswerWasLostIsSentAgain() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(5)
        let handler = CountingHandler()
        let journal = harness.directory + "/wallet-journal.log"
        let caller = Self.losingFirstAcknowledgementAnswer(Self.caller(harness))
        let subscriber = try Self.subscriber(caller, handler, journal: journal)
        let running = Task { await subscriber.run() }
        await handler.wait(for: 5)
        try await Self.drained(harness)
        #expect(await Self.eventually { subscriber.processed.count == 0 })
        running.cancel()
        #expect(handler.received.map(\.messageID) == ids)
        #expect(harness.broker.figures(of: "wallet/wallet-1").acknowledgedTotal == 5)
    }

    /// A node that stops while its acknowledgement is on its way, after the broker removed the messages, never
    /// gets them again, so nothing else would make the journal forget their ids: the next stream acknowledges
    /// every id the journal still holds, and the journal forgets them once the broker answers.
    @Test func idsAcknowledgedJustBeforeAStopAreForgottenAfterTheRestart() async throws {
        let harness = try BrokerHarness.make()
        let ids = try await harness.publish(5)
        let journal = harness.directory + "/wallet-journal.log"
        let first = CountingHandler()
        let unanswered = Self.acknowledgementAnswersNeverArrive(Self.caller(harness))
        let doomed = try Self.subscriber(unanswered, first, journal: journal)
        let firstLife = Task { await doomed.run() }
        await first.wait(for: 5)
        // The first acknowledgement (the others wait behind its call) was committed.
        try #require(await Self.eventually { harness.broker.figures(of: "wallet/wallet-1").pending < 5 })
        firstLife.cancel()
        await firstLife.value
        #expect(try ProcessedNotificationLog(path: journal).count == 5)

        let second = CountingHandler()
        let subscriber = try Self.subscriber(Self.caller(harness), second, journal: journal)
        let secondLife = Task { await subscriber.run() }
        try await Self.drained(harness)
        #expect(await Self.eventually { subscriber.processed.count == 0 })
        secondLife.cancel()
        await secondLife.value
        #expect(first.received.map(\.messageID) == ids)
        #expect(second.received.isEmpty)
        #expect(try ProcessedNotificationLog(path: journal).count == 0)
    }

    /// A message whose handling keeps failing (a TSP whose key batches fail while it still serves the stream) is
    /// delivered again after each failure; the waits before reopening the stream grow as for a TSP that cannot be
    /// reached, instead of reopening it every initial delay (five times a second) for as long as the failure lasts.
    @Test func aMessageThatKeepsFailingIsRetriedWithGrowingWaits() async throws {
        struct AlwaysFailing: NotificationHandler {
            struct Unavailable: Error {}
            func handle(_ notification: TspV1.Notification) async throws { throw Unavailable() }
        }
        let harness = try BrokerHarness.make()
        try await harness.publish(1)
        let waits = WaitLog()
        let subscriber = NotificationSubscriber(
            tsp: Self.caller(harness), handler: AlwaysFailing(),
            processed: try ProcessedNotificationLog(path: harness.directory + "/wallet-journal.log"),
            logger: Logger(node: "wallet-node", sink: MemoryLogSink()),
            options: Self.doublingFromOneMillisecond,
            sleep: { delay in
                let count = waits.record(delay)
                if count >= 5 { throw CancellationError() }
                await Task.yield()
            })
        await subscriber.run()
        #expect(waits.all == [1, 2, 4, 8, 16].map { Duration.milliseconds($0) })
        #expect(harness.broker.figures(of: "wallet/wallet-1").pending == 1)
    }
}
