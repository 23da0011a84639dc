import Synchronization
import Testing
import TokenetNode

/// Repeated failures of one kind (accepts without descriptors, refused handshakes) make one line a second, and the
/// next line says how many were not shown; when no line comes, the last one held back says it at the end of the
/// second.
@Suite struct LogThrottleTests {
    @Test func oneLineAnIntervalWithTheCountOfThoseHeldBack() {
        let throttle = LogThrottle(interval: .seconds(1))
        let start = ContinuousClock.now
        #expect(throttle.admit(at: start) == (true, 0))
        #expect(throttle.admit(at: start + .milliseconds(100)) == (false, 0))
        #expect(throttle.admit(at: start + .milliseconds(900)) == (false, 0))
        #expect(throttle.admit(at: start + .seconds(1)) == (true, 2))
        #expect(throttle.admit(at: start + .seconds(5)) == (true, 0))
    }

    @Test func theLoggerDropsTheLinesAndCountsThem() {
        let sink = MemoryLogSink()
        let logger = Logger(node: "tsp-node", level: .info, sink: sink)
        let throttle = LogThrottle(interval: .seconds(1))
        let start = ContinuousClock.now
        for tenth in 0..<10 {
            logger.info("accept failed", error: "EMFILE", throttledBy: throttle, at: start + .milliseconds(100 * tenth))
        }
        logger.info("accept failed", error: "EMFILE", throttledBy: throttle, at: start + .seconds(1))
        #expect(sink.lines.count == 2, "\(sink.lines)")
        #expect(sink.lines.first?.hasSuffix("accept failed error=EMFILE") == true, "\(sink.lines)")
        #expect(sink.lines.last?.contains("not_shown=9") == true, "\(sink.lines)")
    }

    /// A node that stops writes the line held back at once, with its count: the flush armed for the end of the
    /// interval came after the node's last line, and the drain's last "call failed" lines were lost.
    @Test func aStopWritesTheLineHeldBack() {
        let sink = MemoryLogSink()
        let logger = Logger(node: "issuer-node", level: .info, sink: sink)
        let throttle = LogThrottle(interval: .seconds(3600))
        for attempt in 1...3 { logger.info("call failed", error: "attempt \(attempt)", throttledBy: throttle) }
        #expect(sink.lines.count == 1, "\(sink.lines)")
        throttle.flushHeldBack()
        #expect(sink.lines.count == 2, "\(sink.lines)")
        #expect(sink.lines.last?.contains("error=\"attempt 3\" not_shown=1") == true, "\(sink.lines)")
        throttle.flushHeldBack()
        #expect(sink.lines.count == 2, "nothing more is held: \(sink.lines)")
        // Lines after it go out at once: a flush armed now would come after the node's end.
        logger.info("call failed", error: "attempt 4", throttledBy: throttle)
        #expect(sink.lines.count == 3, "\(sink.lines)")
    }

    /// A burst that ends is counted without waiting for the next failure of its kind: the newest line held back goes
    /// out at the end of the interval, with the count of the others.
    @Test func aBurstThatEndsIsCountedAtTheEndOfTheInterval() async throws {
        let sink = MemoryLogSink()
        let logger = Logger(node: "tsp-node", level: .info, sink: sink)
        let throttle = LogThrottle(interval: .milliseconds(200))
        for attempt in 1...5 { logger.info("handshake refused", error: "attempt \(attempt)", throttledBy: throttle) }
        #expect(sink.lines.count == 1, "\(sink.lines)")
        for _ in 0..<500 where sink.lines.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(sink.lines.count == 2, "\(sink.lines)")
        #expect(sink.lines.first?.hasSuffix("handshake refused error=\"attempt 1\"") == true, "\(sink.lines)")
        // Written at the end of the interval, the line held back says when it happened; the first, written at once,
        // needs not.
        #expect(
            sink.lines.last?.contains(
                /handshake refused happened_at=\d{4}-\d\d-\d\dT[0-9:.]+Z error="attempt 5" not_shown=3$/)
                == true, "\(sink.lines)")
        #expect(sink.lines.first?.contains("happened_at") == false, "\(sink.lines)")
        // Nothing more is held back, so nothing more is written.
        try await Task.sleep(for: .milliseconds(500))
        #expect(sink.lines.count == 2, "\(sink.lines)")
    }

    /// A line let through after a flush stands for itself: the flushed line already counted those before it.
    @Test func theFlushedCountIsNotCountedAgain() async throws {
        let throttle = LogThrottle(interval: .milliseconds(100))
        let written = Mutex<[Int]>([])
        for _ in 0..<3 { throttle.submit { notShown in written.withLock { $0.append(notShown) } } }
        for _ in 0..<500 where written.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(150))
        throttle.submit { notShown in written.withLock { $0.append(notShown) } }
        #expect(written.withLock { $0 } == [0, 1, 0])
    }
}
