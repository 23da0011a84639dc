/// The open streams (or calls) of one connection, by stream id: a hash table with open addressing.
///
/// Every frame sent or received looks its stream up, several times per call on each side. `Dictionary` hashes
/// each `UInt32` key with seeded SipHash, which took about 1.5 % of a busy connection's CPU time; this table hashes
/// by one multiplication (Fibonacci hashing: the top bits of `id × 2^32/φ`), which spreads the consecutive ids a
/// connection hands out evenly, and probes linearly. Keys a peer could choose to collide cost at most a scan of
/// the open streams, which `maxConcurrentStreams` bounds. Removal shifts the following entries back instead of
/// leaving tombstones, so lookups never slow down with churn; the table grows when half full and never shrinks
/// (like `Dictionary`).
struct StreamTable<Value> {
    /// An empty slot; stream ids are 32-bit, so no id is this.
    private static var empty: UInt64 { .max }

    private var keys: [UInt64]
    private var values: [Value?]
    /// Capacity minus one (the capacity is a power of two).
    private var mask: Int
    /// 32 minus log2 of the capacity: the hash keeps the product's top bits.
    private var shift: UInt32
    private(set) var count = 0

    init() {
        self.init(capacity: 16)
    }

    private init(capacity: Int) {
        keys = Array(repeating: Self.empty, count: capacity)
        values = Array(repeating: nil, count: capacity)
        mask = capacity - 1
        shift = 32 - UInt32(capacity.trailingZeroBitCount)
    }

    var isEmpty: Bool { count == 0 }

    /// The ids in the table, in no particular order.
    var ids: [UInt32] {
        keys.compactMap { $0 == Self.empty ? nil : UInt32(truncatingIfNeeded: $0) }
    }

    /// The slot holding `id`, for reading and changing its value in place with `subscript(slot:)`.
    func index(forKey id: UInt32) -> Int? {
        var slot = home(of: id)
        while true {
            let key = keys[slot]
            if key == UInt64(id) { return slot }
            if key == Self.empty { return nil }
            slot = (slot + 1) & mask
        }
    }

    /// The value in a slot that `index(forKey:)` returned, before the table changed in any other way.
    subscript(slot slot: Int) -> Value {
        get { values[slot]! }
        _modify { yield &values[slot]! }
    }

    subscript(id: UInt32) -> Value? {
        get { index(forKey: id).map { values[$0]! } }
        set {
            if let newValue {
                insert(newValue, for: id)
            } else {
                _ = removeValue(forKey: id)
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey id: UInt32) -> Value? {
        guard let slot = index(forKey: id) else { return nil }
        return remove(at: slot)
    }

    /// Removes the value in `slot` (from `index(forKey:)`) and returns it.
    @discardableResult
    mutating func remove(at slot: Int) -> Value {
        let value = values[slot].take()!
        count -= 1
        // Shift back each following entry of the run that may move into the hole: one whose home slot is not
        // between the hole and itself (cyclically), so that every entry stays reachable from its home.
        var hole = slot
        var next = (slot + 1) & mask
        while keys[next] != Self.empty {
            let home = home(of: UInt32(truncatingIfNeeded: keys[next]))
            if (next - home) & mask >= (next - hole) & mask {
                keys[hole] = keys[next]
                values[hole] = values[next].take()
                hole = next
            }
            next = (next + 1) & mask
        }
        keys[hole] = Self.empty
        return value
    }

    mutating func removeAll() {
        self = StreamTable()
    }

    private mutating func insert(_ value: Value, for id: UInt32) {
        if let slot = index(forKey: id) {
            values[slot] = value
            return
        }
        if (count + 1) * 2 > keys.count { grow() }
        var slot = home(of: id)
        while keys[slot] != Self.empty { slot = (slot + 1) & mask }
        keys[slot] = UInt64(id)
        values[slot] = value
        count += 1
    }

    private mutating func grow() {
        var larger = StreamTable(capacity: keys.count * 2)
        for slot in keys.indices where keys[slot] != Self.empty {
            larger.insert(values[slot].take()!, for: UInt32(truncatingIfNeeded: keys[slot]))
        }
        self = larger
    }

    private func home(of id: UInt32) -> Int {
        Int(truncatingIfNeeded: (id &* 0x9E37_79B9) >> shift)
    }
}

extension StreamTable: Sendable where Value: Sendable {}
