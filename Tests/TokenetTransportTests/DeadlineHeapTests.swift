import Testing

@testable import TokenetTransport

@Suite struct DeadlineHeapTests {
    typealias Instant = ContinuousClock.Instant

    /// A scrambled but repeatable order: i * 7919 mod 10007 visits every residue once (10007 is prime).
    static func scrambled(_ count: Int) -> [Int] {
        (0..<count).map { ($0 * 7919) % 10007 }
    }

    @Test func valuesComeOutInDeadlineOrder() {
        let base = Instant.now
        var heap = DeadlineHeap<Int>()
        for value in Self.scrambled(2000) { heap.insert(value, deadline: base + .microseconds(value)) }
        #expect(heap.count == 2000)
        var out: [Int] = []
        while let (deadline, value) = heap.removeEarliest() {
            #expect(deadline == base + .microseconds(value))
            out.append(value)
        }
        #expect(out == Self.scrambled(2000).sorted())
        #expect(heap.isEmpty)
    }

    /// Against a sorted array: interleaved insertions, removals of due values and filtering keep the same contents
    /// and the same earliest value throughout.
    @Test func matchesASortedArrayUnderChurn() {
        let base = Instant.now
        var heap = DeadlineHeap<Int>()
        var model: [Int] = []
        var now = 0
        for (step, value) in Self.scrambled(6000).enumerated() {
            // Deadlines ahead of a clock that moves forward, as calls' deadlines do.
            let deadline = now + value % 500
            heap.insert(deadline, deadline: base + .microseconds(deadline))
            model.append(deadline)
            if step % 7 == 0 {
                now += 60
                var due: [Int] = []
                while let value = heap.removeDue(at: base + .microseconds(now)) { due.append(value) }
                let expected = model.filter { $0 <= now }.sorted()
                model.removeAll { $0 <= now }
                #expect(due == expected)
            }
            if step % 997 == 0 {
                heap.removeAll { $0 % 3 == 0 }
                model.removeAll { $0 % 3 == 0 }
            }
            #expect(heap.count == model.count)
            #expect(heap.earliest?.value == model.min())
        }
        var rest: [Int] = []
        while let (_, value) = heap.removeEarliest() { rest.append(value) }
        #expect(rest == model.sorted())
    }

    @Test func removeDueLeavesLaterValues() {
        let base = Instant.now
        var heap = DeadlineHeap<String>()
        heap.insert("later", deadline: base + .seconds(2))
        heap.insert("now", deadline: base)
        #expect(heap.removeDue(at: base) == "now")
        #expect(heap.removeDue(at: base + .seconds(1)) == nil)
        #expect(heap.earliest?.value == "later")
        heap.removeAll()
        #expect(heap.earliest == nil)
    }
}
