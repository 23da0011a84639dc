import Synchronization
import Testing

@testable import TokenetTSP

/// The gate that keeps token-state changes and their CARD_STATE publications in commit order.
@Suite struct StateChangeGateTests {
    final class Occupancy: Sendable {
        let state = Mutex((now: 0, most: 0, entries: 0))
    }

    @Test func callersRunOneAtATimeAndNoneIsLost() async throws {
        let gate = StateChangeGate()
        let inside = Occupancy()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await gate.run {
                        inside.state.withLock {
                            $0.now += 1
                            $0.most = max($0.most, $0.now)
                            $0.entries += 1
                        }
                        // Suspend inside the gate, as a publication waiting for the broker's commit does.
                        await Task.yield()
                        try await Task.sleep(for: .microseconds(100))
                        inside.state.withLock { $0.now -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let figures = inside.state.withLock { $0 }
        #expect(figures.most == 1 && figures.entries == 50 && figures.now == 0)
    }

    @Test func aThrowingCallerLetsTheNextOneIn() async throws {
        struct Refused: Error {}
        let gate = StateChangeGate()
        await #expect(throws: Refused.self) { try await gate.run { throw Refused() } }
        let value = try await gate.run { 42 }
        #expect(value == 42)
    }
}
