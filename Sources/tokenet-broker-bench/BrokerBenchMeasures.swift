import Dispatch
import Foundation
import Synchronization
import TokenetNode
import TokenetWire

/// Monotonic nanoseconds.
func nanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// A bound on messages published and not yet acknowledged: publishers wait for credit.
final class Credits: Sendable {
    private let state: Mutex<(available: Int, waiters: [CheckedContinuation<Void, Never>])>

    init(_ count: Int) {
        state = Mutex((count, []))
    }

    func acquire() async {
        await withCheckedContinuation { continuation in
            let granted = state.withLock { state in
                guard state.available > 0 else {
                    state.waiters.append(continuation)
                    return false
                }
                state.available -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    func release(_ count: Int) {
        let ready = state.withLock { state in
            let woken = Array(state.waiters.prefix(count))
            state.waiters.removeFirst(woken.count)
            state.available += count - woken.count
            return woken
        }
        for waiter in ready { waiter.resume() }
    }
}

/// One subscriber's handler: notes when each message was published (carried in its body) and when it was handled
/// and acknowledged.
final class TimingHandler: NotificationHandler {
    private struct State {
        var published: [String: UInt64] = [:]
        var handled: [UInt64] = []
        var acknowledged: [UInt64] = []
    }

    private let state = Mutex(State())
    private let onAcknowledged: @Sendable (Int) -> Void

    init(onAcknowledged: @escaping @Sendable (Int) -> Void) {
        self.onAcknowledged = onAcknowledged
    }

    static func body(publishedAt: UInt64) -> TspV1.Notification.Body {
        withUnsafeBytes(of: publishedAt.bigEndian) { .opaque(Data($0)) }
    }

    func handle(_ notification: TspV1.Notification) async {
        guard case .opaque(let data) = notification.body, data.count == 8 else { return }
        let publishedAt = data.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let now = nanoseconds()
        state.withLock { state in
            state.published[notification.messageID] = publishedAt
            state.handled.append(now &- publishedAt)
        }
    }

    func acknowledged(_ ids: [String]) {
        let now = nanoseconds()
        let count = state.withLock { state in
            var count = 0
            for id in ids {
                guard let publishedAt = state.published.removeValue(forKey: id) else { continue }
                state.acknowledged.append(now &- publishedAt)
                count += 1
            }
            return count
        }
        onAcknowledged(count)
    }

    var latencies: (handled: [UInt64], acknowledged: [UInt64]) {
        state.withLock { ($0.handled, $0.acknowledged) }
    }
}

/// p50 and p99 of nanosecond samples, in milliseconds.
func percentiles(_ samples: [UInt64]) -> (p50: Double, p99: Double) {
    guard !samples.isEmpty else { return (0, 0) }
    let sorted = samples.sorted()
    func at(_ fraction: Double) -> Double {
        Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]) / 1_000_000
    }
    return (at(0.50), at(0.99))
}

/// This process's CPU time (user + system), in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
        .split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
}

/// A shared count.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    /// Adds `amount` and returns the new value.
    func add(_ amount: Int) -> Int { value.wrappingAdd(amount, ordering: .relaxed).newValue }
}
