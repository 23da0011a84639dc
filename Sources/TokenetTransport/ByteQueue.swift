#if canImport(Glibc)
    import Glibc
#endif

/// Bytes waiting in one direction of a connection, in one contiguous block the socket calls and OpenSSL work on in
/// place: the driver reads the socket straight into its free space and sends straight from its bytes.
///
/// Consumed bytes are dropped by moving a start index; the block is compacted only when it must make room, and
/// returns to its initial size once empty after a burst, so an idle connection does not keep a large block.
/// Not thread-safe: it belongs to one engine on one event loop.
final class ByteQueue {
    /// An empty queue larger than this shrinks back to its initial capacity.
    private static let keptCapacity = 256 * 1024

    private var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    private let initialCapacity: Int
    private var start = 0
    private var end = 0

    init(initialCapacity: Int = 16 * 1024) {
        self.initialCapacity = max(initialCapacity, 64)
        capacity = self.initialCapacity
        base = Self.allocate(capacity)
    }

    deinit {
        free(base)
    }

    var count: Int { end - start }
    var isEmpty: Bool { start == end }

    /// The waiting bytes; valid until the queue is next changed.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base + start, count: end - start) }

    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        let space = freeSpace(atLeast: bytes.count)
        space.baseAddress!.copyMemory(from: source, byteCount: bytes.count)
        end += bytes.count
    }

    /// At least `minimum` bytes of free space after the waiting bytes, to fill and then `commit`.
    func freeSpace(atLeast minimum: Int) -> UnsafeMutableRawBufferPointer {
        if capacity - end < minimum {
            makeRoom(for: minimum)
        }
        return UnsafeMutableRawBufferPointer(start: base + end, count: capacity - end)
    }

    /// Adds `count` bytes written into the space `freeSpace` returned.
    func commit(_ count: Int) {
        precondition(count >= 0 && end + count <= capacity, "committed \(count) bytes beyond the free space")
        end += count
    }

    /// Drops the first `count` waiting bytes.
    func consume(_ count: Int) {
        precondition(count >= 0 && count <= end - start, "consumed \(count) of \(end - start) bytes")
        start += count
        if start == end {
            start = 0
            end = 0
            if capacity > Self.keptCapacity {
                free(base)
                capacity = initialCapacity
                base = Self.allocate(capacity)
            }
        }
    }

    /// Copies up to `buffer.count` waiting bytes into `buffer` and drops them; returns how many.
    func take(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let taken = min(buffer.count, count)
        guard taken > 0, let target = buffer.baseAddress else { return 0 }
        target.copyMemory(from: base + start, byteCount: taken)
        consume(taken)
        return taken
    }

    /// Moves the waiting bytes to the front, then grows the block if that is not enough.
    private func makeRoom(for minimum: Int) {
        let waiting = end - start
        if start > 0 {
            if waiting > 0 { memmove(base, base + start, waiting) }
            start = 0
            end = waiting
        }
        guard capacity - end < minimum else { return }
        var newCapacity = capacity * 2
        while newCapacity - waiting < minimum { newCapacity *= 2 }
        guard let grown = realloc(base, newCapacity) else {
            fatalError("Tokenet: out of memory growing a connection buffer to \(newCapacity) bytes")
        }
        base = grown
        capacity = newCapacity
    }

    private static func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        guard let block = malloc(count) else {
            fatalError("Tokenet: out of memory allocating a \(count)-byte connection buffer")
        }
        return block
    }
}
