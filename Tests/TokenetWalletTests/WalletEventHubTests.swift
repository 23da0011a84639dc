import Testing
import TokenetWire

@testable import TokenetWallet

/// The fan-out alone: every listener gets every event in the same order; one that stops reading is dropped once its
/// buffer is full and the others carry on.
@Suite struct WalletEventHubTests {
    static func event(_ id: String) -> WalletV1.WalletEvent {
        WalletV1.WalletEvent(kind: .tokenStatusChanged, digitalCardID: id, tokenState: .active)
    }

    @Test func twoListenersReceiveEveryEventInOrder() async throws {
        let hub = WalletEventHub(capacity: 4)
        let first = hub.subscribe()
        let second = hub.subscribe()
        #expect(hub.listenerCount == 2)
        for id in ["a", "b", "c"] { hub.publish(Self.event(id)) }
        var firstIterator = first.events.makeAsyncIterator()
        var secondIterator = second.events.makeAsyncIterator()
        for (sequence, id) in zip(UInt64(1)..., ["a", "b", "c"]) {
            let one = await firstIterator.next()
            let two = await secondIterator.next()
            #expect(one?.digitalCardID == id && one?.sequence == sequence)
            #expect(two?.digitalCardID == id && two?.sequence == sequence)
        }
    }

    @Test func aListenerThatNeverReadsIsDroppedWithoutAffectingTheOther() async throws {
        let hub = WalletEventHub(capacity: 2)
        let idle = hub.subscribe()
        let reader = hub.subscribe()
        var readerIterator = reader.events.makeAsyncIterator()
        var received: [String] = []
        for id in ["a", "b", "c", "d", "e"] {
            hub.publish(Self.event(id))
            if let event = await readerIterator.next() { received.append(event.digitalCardID) }
        }
        #expect(received == ["a", "b", "c", "d", "e"])
        #expect(hub.listenerCount == 1)
        #expect(hub.wasDropped(idle.id))
        #expect(!hub.wasDropped(reader.id))
        // The idle listener still gets what fitted in its buffer, then its stream ends.
        var idleEvents: [String] = []
        for await event in idle.events { idleEvents.append(event.digitalCardID) }
        #expect(idleEvents == ["a", "b"])
    }

    @Test func aClosedListenerIsForgotten() async throws {
        let hub = WalletEventHub()
        do {
            let subscription = hub.subscribe()
            #expect(hub.listenerCount == 1 && subscription.id == 1)
        }
        // Dropping the stream ends it, and the hub stops holding events for it.
        #expect(hub.listenerCount == 0)
        #expect(hub.publish(Self.event("a")) == 1)
    }
}
