import Synchronization
import TokenetWire

/// Fans the wallet's state changes out to every open issuer-app listener. Each listener has a bounded buffer: a
/// listener that falls `capacity` events behind is dropped (its stream ends and `wasDropped` says why) instead of
/// making the wallet hold an ever-growing backlog for it; the others are unaffected.
public final class WalletEventHub: Sendable {
    public static let defaultCapacity = 64

    /// One open listener: its events in order, ending when it is closed or dropped.
    public struct Subscription: Sendable {
        public let id: UInt64
        public let events: AsyncStream<WalletV1.WalletEvent>
    }

    private struct State {
        var nextSequence: UInt64 = 1
        var nextID: UInt64 = 1
        var listeners: [UInt64: AsyncStream<WalletV1.WalletEvent>.Continuation] = [:]
        var dropped: Set<UInt64> = []
    }

    public let capacity: Int
    private let state = Mutex(State())

    public init(capacity: Int = WalletEventHub.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// Opens a listener that receives every event published from now on.
    public func subscribe() -> Subscription {
        let (stream, continuation) = AsyncStream.makeStream(
            of: WalletV1.WalletEvent.self, bufferingPolicy: .bufferingOldest(capacity))
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.listeners[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return Subscription(id: id, events: stream)
    }

    /// Stamps the event with the next sequence number and hands it to every listener. Yielding under the lock keeps
    /// all listeners' orders identical when several handlers publish at once; `yield` never suspends. Full
    /// listeners are finished after the lock is released, because finishing runs their termination handler, which
    /// takes the lock again.
    @discardableResult
    public func publish(_ event: WalletV1.WalletEvent) -> UInt64 {
        let (sequence, full) = state.withLock { state in
            var event = event
            event.sequence = state.nextSequence
            state.nextSequence += 1
            var full: [AsyncStream<WalletV1.WalletEvent>.Continuation] = []
            for (id, continuation) in state.listeners {
                if case .dropped = continuation.yield(event) {
                    state.dropped.insert(id)
                    state.listeners[id] = nil
                    full.append(continuation)
                }
            }
            return (event.sequence, full)
        }
        for continuation in full { continuation.finish() }
        return sequence
    }

    /// True when the listener's stream ended because it fell behind (read once: the record is then forgotten).
    public func wasDropped(_ id: UInt64) -> Bool {
        state.withLock { $0.dropped.remove(id) != nil }
    }

    /// The number of open listeners.
    public var listenerCount: Int {
        state.withLock { $0.listeners.count }
    }

    private func remove(_ id: UInt64) {
        _ = state.withLock { $0.listeners.removeValue(forKey: id) }
    }
}
