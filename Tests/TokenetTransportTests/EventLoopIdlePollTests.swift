import Dispatch
import Foundation
import Synchronization
import Testing

@testable import TokenetTransport

/// The idle poll: after it was busy, a loop checks its queue and sockets awake for `idlePoll` before it sleeps, so
/// work that arrives meanwhile needs no eventfd wake-up; once the window has passed it sleeps and needs one again.
@Suite struct EventLoopIdlePollTests {
    /// Queues a closure from this (non-loop) thread and waits until the loop has run it.
    private func roundTrip(_ loop: EventLoop) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            #expect(loop.execute { done.resume() })
        }
    }

    /// Runs `body` on a thread of its own: a test that blocks must not wait behind other tests for one of the
    /// cooperative pool's threads, or its pauses would stretch far past what it means them to be.
    private func onOwnThread(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                body()
                done.resume()
            }.start()
        }
    }

    @Test func workQueuedWhileTheLoopPollsNeedsNoWakeUp() async throws {
        let loop = try EventLoop(name: "test-idle-poll", idlePoll: .seconds(10))
        defer { loop.shutdown() }
        let signals = Mutex<(before: Int, after: Int)>((0, 0))
        await onOwnThread {
            func roundTrip() {
                let ran = DispatchSemaphore(value: 0)
                loop.execute { ran.signal() }
                ran.wait()
            }
            roundTrip()  // makes the loop busy, so that it polls afterwards
            let before = loop.wakeUpSignals
            for _ in 0..<10 {
                usleep(1000)  // far inside the window
                roundTrip()
            }
            signals.withLock { $0 = (before, loop.wakeUpSignals) }
        }
        let (before, after) = signals.withLock { $0 }
        #expect(after == before)
    }

    /// A connection whose peer sends from the loop's own CPU — here both ends live on the one loop, so the loop
    /// thread sends for both — makes the loop sleep right after reading instead of polling for its (long) window.
    /// Counted by the loop rather than seen through wake-ups: the echo server's tasks queue work on the loop from
    /// the pool, and under load that work can come after the read, when the loop rightly polls again. The scheduler
    /// may also move the thread between a send and the read, which makes one exchange look cross-CPU, hence a few
    /// tries.
    @Test func aLoopThatReadFromAPeerOnItsOwnCPUSleepsInsteadOfPolling() async throws {
        let loop = try EventLoop(name: "test-idle-poll-same-cpu", idlePoll: .seconds(10))
        defer { loop.shutdown() }
        let server = try await PlainEchoServer(loop: loop)
        let client = try await PlainConnection.connect(host: "127.0.0.1", port: server.port, on: loop)
        for attempt in 0..<50 where loop.idlePollsSkipped == 0 {
            let message = pattern(100, seed: attempt)
            #expect(try await plainEchoRoundTrip(client, messages: [message]) == message)
        }
        #expect(loop.idlePollsSkipped > 0)
        await client.close()
        await server.stop()
    }

    @Test func aLoopWithoutIdlePollSleepsAtOnce() async throws {
        let loop = try EventLoop(name: "test-no-idle-poll", idlePoll: .zero)
        defer { loop.shutdown() }
        #expect(loop.idlePoll == .zero)
        await roundTrip(loop)
        let before = loop.wakeUpSignals
        for _ in 0..<10 {
            try await Task.sleep(for: .milliseconds(20))  // the loop is asleep again long before this ends
            await roundTrip(loop)
        }
        #expect(loop.wakeUpSignals - before >= 5)
    }

    @Test func thePollEndsAfterItsWindow() async throws {
        let loop = try EventLoop(name: "test-idle-poll-window", idlePoll: .milliseconds(1))
        defer { loop.shutdown() }
        await roundTrip(loop)
        try await Task.sleep(for: .milliseconds(200))
        let before = loop.wakeUpSignals
        await roundTrip(loop)
        #expect(loop.wakeUpSignals == before + 1)
    }

    @Test func aTimerDueDuringAPollFiresOnTime() async throws {
        let loop = try EventLoop(name: "test-idle-poll-timer", idlePoll: .seconds(60))
        defer { loop.shutdown() }
        let fired = Mutex<DispatchTimeoutResult?>(nil)
        await onOwnThread {
            let ran = DispatchSemaphore(value: 0)
            loop.execute { ran.signal() }
            ran.wait()  // the loop is busy now, so it polls for up to a minute
            let timer = DispatchSemaphore(value: 0)
            loop.scheduleTimer(after: .milliseconds(20)) { timer.signal() }
            // Far below the poll's minute, far above 20 ms even on a loaded machine.
            fired.withLock { $0 = timer.wait(timeout: .now() + .seconds(10)) }
        }
        #expect(fired.withLock { $0 } == .success)
    }

    @Test func shutdownEndsAPollAtOnce() async throws {
        let loop = try EventLoop(name: "test-idle-poll-shutdown", idlePoll: .seconds(60))
        await roundTrip(loop)
        let started = ContinuousClock.now
        loop.shutdown()  // waits for the loop thread to exit
        #expect(ContinuousClock.now - started < .seconds(30))
    }
}
