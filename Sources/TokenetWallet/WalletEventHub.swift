import Synchronization
import TokenetRPC
import TokenetWire

/// Fans the wallet's state changes out to every open listener. Each listener has a bounded buffer: a listener that
/// falls `capacity` events behind is dropped (its stream ends and `wasDropped` says why) instead of making the wallet
/// hold an ever-growing backlog for it; the others are unaffected.
///
/// An issuer app hears only what is its business (`shown(_:cardIssuerNodeID:to:)`): events about its own issuer's
/// cards, the active account, and the selection (without the card when another issuer's card was selected). Each
/// listener numbers the events it hears itself, 1, 2, 3, …, so a gap still means it missed some.
public final class WalletEventHub: Sendable {
    public static let defaultCapacity = 64

    /// One open listener: its events in order, ending when it is closed or dropped.
    public struct Subscription: Sendable {
        public let id: UInt64
        public let events: AsyncStream<WalletV1.WalletEvent>
    }

    /// Who listens: the wallet's own tasks hear everything; an issuer app, known by the node id of its certificate,
    /// hears about its own issuer's cards only.
    public enum Listener: Sendable, Equatable {
        case wallet
        case issuerApp(nodeID: String)
    }

    private struct Entry {
        let listener: Listener
        let continuation: AsyncStream<WalletV1.WalletEvent>.Continuation
        var lastSequence: UInt64 = 0
    }

    private struct State {
        var published: UInt64 = 0
        var nextID: UInt64 = 1
        var listeners: [UInt64: Entry] = [:]
        var dropped: Set<UInt64> = []
    }

    public let capacity: Int
    private let state = Mutex(State())

    public init(capacity: Int = WalletEventHub.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// Opens a listener that receives, from now on, every event `listener` may hear.
    public func subscribe(as listener: Listener = .wallet) -> Subscription {
        let (stream, continuation) = AsyncStream.makeStream(
            of: WalletV1.WalletEvent.self, bufferingPolicy: .bufferingOldest(capacity))
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.listeners[id] = Entry(listener: listener, continuation: continuation)
            return id
        }
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return Subscription(id: id, events: stream)
    }

    /// Hands the event to every listener that may hear it, stamped with that listener's next sequence number, and
    /// returns how many events were published in all. `cardIssuerNodeID` is, for an event about a card, the node
    /// id of the issuer app the card belongs to (`WalletCardRecord.issuerNodeID`); nil for a card no issuer app may
    /// see. Yielding under the lock keeps all listeners' orders identical when several handlers publish at once;
    /// `yield` never suspends. Full listeners are finished after the lock is released, because finishing runs
    /// their termination handler, which takes the lock again.
    @discardableResult
    public func publish(_ event: WalletV1.WalletEvent, cardIssuerNodeID: String? = nil) -> UInt64 {
        // The flow that made the change: what listeners do about it (a first batch of payment keys) carries it on.
        var event = event
        if event.traceID.isEmpty { event.traceID = FlowTrace.active ?? "" }
        let (published, full) = state.withLock { state in
            state.published += 1
            var full: [AsyncStream<WalletV1.WalletEvent>.Continuation] = []
            for (id, entry) in state.listeners {
                guard var shown = Self.shown(event, cardIssuerNodeID: cardIssuerNodeID, to: entry.listener) else {
                    continue
                }
                shown.sequence = entry.lastSequence + 1
                state.listeners[id]?.lastSequence = shown.sequence
                if case .dropped = entry.continuation.yield(shown) {
                    state.dropped.insert(id)
                    state.listeners[id] = nil
                    full.append(entry.continuation)
                }
            }
            return (state.published, full)
        }
        for continuation in full { continuation.finish() }
        return published
    }

    /// What `listener` hears of `event`, or nil when it is none of its business. The active account concerns every
    /// app. A card's events reach the app of the card's issuer only. A selection reaches every app, so each can
    /// tell its card is no longer the selected one, but names the card only to the card's own issuer's app.
    static func shown(_ event: WalletV1.WalletEvent, cardIssuerNodeID: String?, to listener: Listener)
        -> WalletV1.WalletEvent?
    {
        guard case .issuerApp(let nodeID) = listener else { return event }
        let own = cardIssuerNodeID != nil && cardIssuerNodeID == nodeID
        switch event.kind {
        case .tokenizedCardAdded, .tokenizedCardRemoved, .tokenStatusChanged:
            return own ? event : nil
        case .selectedCardChanged:
            guard !own else { return event }
            var withoutCard = event
            withoutCard.digitalCardID = ""
            withoutCard.tokenState = .unspecified
            return withoutCard
        case .activeWalletAccountChanged:
            return event
        case .unspecified, .unrecognized:
            return own ? event : nil
        }
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
