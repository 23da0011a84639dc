import Testing

@testable import TokenetRPC

@Suite struct StreamTableTests {
    @Test func startsEmptyAndFindsNothing() {
        let table = StreamTable<String>()
        #expect(table.isEmpty)
        #expect(table[1] == nil)
        #expect(table[0] == nil)
        #expect(table.index(forKey: UInt32.max) == nil)
        #expect(table.ids.isEmpty)
    }

    @Test func storesReplacesAndRemovesIncludingTheExtremeIDs() {
        var table = StreamTable<String>()
        table[0] = "zero"
        table[UInt32.max] = "max"
        table[7] = "seven"
        table[7] = "SEVEN"
        #expect(table.count == 3)
        #expect(table[0] == "zero")
        #expect(table[UInt32.max] == "max")
        #expect(table[7] == "SEVEN")
        #expect(table.ids.sorted() == [0, 7, UInt32.max])
        #expect(table.removeValue(forKey: 7) == "SEVEN")
        #expect(table.removeValue(forKey: 7) == nil)
        table[0] = nil
        #expect(table.count == 1)
        #expect(table[0] == nil)
        table.removeAll()
        #expect(table.isEmpty)
        #expect(table[UInt32.max] == nil)
    }

    @Test func changesAValueInPlaceThroughItsSlot() throws {
        var table = StreamTable<[Int]>()
        table[5] = [1]
        let slot = try #require(table.index(forKey: 5))
        table[slot: slot].append(2)
        #expect(table[5] == [1, 2])
        #expect(
            table.update(5) { values -> Int in
                values.append(3)
                return values.count
            } == 3)
        #expect(table.update(6) { $0.append(9) } == nil, "no value for 6: the body does not run")
        #expect(table.contains(5) && !table.contains(6))
        #expect(table.remove(at: slot) == [1, 2, 3])
        #expect(table.isEmpty)
    }

    /// Ids that all hash to the same home slot make one long run; removing from its middle must keep every later
    /// entry reachable (the backward shift), also when the run wraps around the end of the table.
    @Test func removalInsideARunOfCollidingIDsKeepsEveryEntryReachable() {
        // With 16 slots the home is the top 4 bits of id × 0x9E3779B9: collect ids that share one.
        let home: (UInt32) -> UInt32 = { ($0 &* 0x9E37_79B9) >> 28 }
        for target: UInt32 in [3, 15] {  // 15: the run wraps to slot 0
            let colliding = Array((1...100_000).lazy.map { UInt32($0) }.filter { home($0) == target }.prefix(7))
            #expect(colliding.count == 7)
            for removed in colliding.indices {
                var table = StreamTable<UInt32>()
                for id in colliding { table[id] = id * 10 }
                table[colliding[removed]] = nil
                for (index, id) in colliding.enumerated() {
                    #expect(table[id] == (index == removed ? nil : id * 10), "id \(id) after removing \(removed)")
                }
                #expect(table.count == 6)
            }
        }
    }

    /// Random inserts, replacements and removals, on sequential ids (as a connection hands them out) and on
    /// arbitrary ones, through growth: the table always agrees with a `Dictionary` doing the same.
    @Test func agreesWithADictionaryUnderRandomChurn() {
        var generator = SeededGenerator(seed: 0x5EED)
        for sequential in [true, false] {
            var table = StreamTable<Int>()
            var reference: [UInt32: Int] = [:]
            var nextID: UInt32 = 1
            for step in 0..<20_000 {
                let roll = Int.random(in: 0..<10, using: &generator)
                if roll < 5 || reference.isEmpty {
                    let id: UInt32
                    if sequential {
                        id = nextID
                        nextID += 2
                    } else {
                        id = UInt32.random(in: 0...UInt32.max, using: &generator)
                    }
                    table[id] = step
                    reference[id] = step
                } else if roll < 9 {
                    let id = reference.keys.randomElement(using: &generator)!
                    #expect(table.removeValue(forKey: id) == reference.removeValue(forKey: id))
                } else {
                    let id = UInt32.random(in: 0...UInt32.max, using: &generator)
                    #expect(table[id] == reference[id])
                }
            }
            #expect(table.count == reference.count)
            #expect(table.ids.sorted() == reference.keys.sorted())
            for (id, value) in reference { #expect(table[id] == value) }
        }
    }
}

/// SplitMix64, so that a failure replays.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
