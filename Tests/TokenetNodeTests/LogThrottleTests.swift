import Testing
import TokenetNode

/// Repeated failures of one kind (accepts without descriptors, refused handshakes) make one line a second, and the
/// next line says how many were not shown.
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
}
