import Synchronization
import Testing
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// A Subscribe stream that stayed open with nothing to carry (a quiet queue) was open all the same: it is announced
/// in the log, and when it fails the subscriber starts again from the initial delay and says so, instead of
/// carrying on the backoff of the failures that came before it.
extension NotificationSubscriberTests {
    /// Seen before the fix: a stream counted as open only once a message came on it, so the failure of a quiet
    /// stream that had been up for hours waited 8 ms here (the fourth failure in a row; up to 10 s with the nodes'
    /// backoff) and was logged at debug level only.
    @Test(.timeLimit(.minutes(5))) func aQuietStreamThatFailsStartsTheBackoffAgain() async throws {
        let harness = try BrokerHarness.make()
        // The first three Subscribe calls are refused as by an unreachable TSP.
        let subscribes = Atomic<Int>(0)
        let caller = InterceptingCaller(
            base: Self.caller(harness),
            beforeStream: { _ in
                if subscribes.add(1, ordering: .relaxed).newValue <= 3 {
                    throw RPCError(.unavailable, "cannot connect to the TSP (test)")
                }
            })
        let waits = WaitLog()
        let log = MemoryLogSink()
        let subscriber = NotificationSubscriber(
            tsp: caller, handler: CountingHandler(),
            processed: try ProcessedNotificationLog(path: harness.directory + "/wallet-journal.log"),
            logger: Logger(node: "wallet-node", sink: log),
            options: .init(
                backoff: RPCChannel.Backoff(initial: .milliseconds(1), maximum: .seconds(1), multiplier: 2, jitter: 0),
                openAfter: .milliseconds(50)),
            sleep: { delay in
                let count = waits.record(delay)
                if count >= 4 { throw CancellationError() }
            })
        let running = Task { await subscriber.run() }
        try #require(await Self.eventually { harness.broker.figures(of: "wallet/wallet-1").connected })
        try await Task.sleep(for: .milliseconds(200))
        // Another Subscribe of wallet-1 takes the queue over: the quiet stream ends with ABORTED.
        let other = try await harness.client().subscribe(TspV1.SubscribeRequest())
        await running.value
        #expect(waits.all == [1, 2, 4, 1].map { Duration.milliseconds($0) })
        let failures = log.lines.filter { $0.contains("notification stream to the TSP failed") }
        #expect(failures.count == 2, "\(failures)")
        #expect(failures.last?.contains("replaced this stream") == true, "\(failures)")
        #expect(failures.allSatisfy { $0.lowercased().contains("warn") }, "\(failures)")
        // The quiet stream was announced once it had stayed up, though no message came on it.
        let announced = log.lines.filter { $0.contains("subscribed to the TSP's notifications") }
        #expect(announced.count == 1, "\(log.lines)")
        _ = other
    }

    /// A TSP started with the node may still be starting: a Subscribe that fails while the node starts is said at
    /// info level, and the first failure after the start is the warning; later ones are not repeated.
    @Test(.timeLimit(.minutes(5))) func aTSPNotUpWhileTheNodeStartsIsSaidAtInfoAndWarnedAfterTheStart() async throws {
        // Four Subscribe calls refused as by an unreachable TSP, the first while the node starts.
        let lines = try await Self.linesOfASubscriber(
            refusing: 4, with: RPCError(.unavailable, "cannot connect to the TSP (test)"), isStarting: { $0 < 2 })
        let early = lines.filter { $0.contains("cannot be subscribed to yet (it may still be starting)") }
        let warnings = lines.filter { $0.contains("notification stream to the TSP failed") && $0.contains(" warning ") }
        #expect(early.count == 1 && early[0].contains(" info "), "\(lines)")
        #expect(warnings.count == 1, "\(lines)")
    }

    /// A TSP that refuses this node (another PKI) is no TSP still starting: a warning at once, even while the node
    /// starts.
    @Test(.timeLimit(.minutes(5))) func aRefusalWhileTheNodeStartsIsAWarningAtOnce() async throws {
        let refusal = RPCError(
            .unavailable, "cannot connect to the TSP (test): unknown CA",
            cause: NotConnected(reason: "unknown CA", refused: true))
        let lines = try await Self.linesOfASubscriber(refusing: 1, with: refusal, isStarting: { _ in true })
        #expect(!lines.contains { $0.contains("may still be starting") }, "\(lines)")
        let warnings = lines.filter { $0.contains("notification stream to the TSP failed") && $0.contains(" warning ") }
        #expect(warnings.count == 1, "\(lines)")
    }

    /// The log of a subscriber whose first `refused` Subscribe calls fail with `error`, run until it is subscribed;
    /// `isStarting` is told how many Subscribe calls were made so far.
    static func linesOfASubscriber(
        refusing refused: Int, with error: RPCError, isStarting: @escaping @Sendable (Int) -> Bool
    ) async throws -> [String] {
        let harness = try BrokerHarness.make()
        let subscribes = Atomic<Int>(0)
        let caller = InterceptingCaller(
            base: Self.caller(harness),
            beforeStream: { _ in
                if subscribes.add(1, ordering: .relaxed).newValue <= refused { throw error }
            })
        let log = MemoryLogSink()
        var options = NotificationSubscriber.Options(
            backoff: RPCChannel.Backoff(initial: .milliseconds(1), maximum: .seconds(1), multiplier: 2, jitter: 0))
        options.isStarting = { isStarting(subscribes.load(ordering: .relaxed)) }
        let subscriber = NotificationSubscriber(
            tsp: caller, handler: CountingHandler(),
            processed: try ProcessedNotificationLog(path: harness.directory + "/wallet-journal.log"),
            logger: Logger(node: "wallet-node", sink: log), options: options)
        let running = Task { await subscriber.run() }
        try #require(await Self.eventually { harness.broker.figures(of: "wallet/wallet-1").connected })
        running.cancel()
        await running.value
        return log.lines
    }
}
