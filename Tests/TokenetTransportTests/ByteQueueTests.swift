import Testing

@testable import TokenetTransport

/// The connection buffers OpenSSL and the socket work on in place: bytes must come out in order whatever mix of
/// appends, in-place fills and partial consumption put them there.
@Suite struct ByteQueueTests {
    static func pattern(_ count: Int, from start: Int = 0) -> [UInt8] {
        (start..<start + count).map { UInt8(truncatingIfNeeded: $0 &* 13) }
    }

    @Test func appendedBytesComeOutInOrderAcrossGrowthAndCompaction() {
        let queue = ByteQueue(initialCapacity: 100)
        var expected: [UInt8] = []
        var produced = 0
        for round in 0..<50 {
            let chunk = Self.pattern(37 + round * 11, from: produced)
            produced += chunk.count
            chunk.withUnsafeBytes { queue.append($0) }
            expected += chunk
            // Take a varying share out, as a socket that accepts part of a send would.
            let taken = expected.count * (round % 3 + 1) / 4
            #expect(Array(queue.bytes.prefix(taken)) == Array(expected.prefix(taken)))
            queue.consume(taken)
            expected.removeFirst(taken)
            #expect(queue.count == expected.count && Array(queue.bytes) == expected)
        }
    }

    @Test func freeSpaceIsFilledInPlaceAndCommitted() {
        let queue = ByteQueue(initialCapacity: 64)
        let first = Self.pattern(40)
        let space = queue.freeSpace(atLeast: 40)
        #expect(space.count >= 40)
        space.copyBytes(from: first)
        queue.commit(40)
        queue.consume(30)
        // 10 bytes wait; asking for more room than is free moves them to the front or grows the block.
        let second = Self.pattern(100, from: 40)
        let more = queue.freeSpace(atLeast: 100)
        #expect(more.count >= 100)
        more.copyBytes(from: second)
        queue.commit(100)
        #expect(Array(queue.bytes) == Array(first[30...]) + second)
    }

    @Test func takeCopiesOutAndAnEmptiedLargeQueueShrinks() {
        let queue = ByteQueue(initialCapacity: 1024)
        let bytes = Self.pattern(300_000)
        bytes.withUnsafeBytes { queue.append($0) }
        #expect(queue.capacity >= 300_000)
        var out = [UInt8](repeating: 0, count: 200_000)
        let taken = out.withUnsafeMutableBytes { queue.take(into: $0) }
        #expect(taken == 200_000 && out == Array(bytes.prefix(200_000)))
        out = [UInt8](repeating: 0, count: 200_000)
        let rest = out.withUnsafeMutableBytes { queue.take(into: $0) }
        #expect(rest == 100_000 && Array(out.prefix(rest)) == Array(bytes.suffix(100_000)))
        #expect(queue.isEmpty && queue.capacity == 1024)
    }
}
