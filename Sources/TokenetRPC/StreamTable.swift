/// The open streams (or calls) of one connection, by stream id: a hash table with open addressing.
///
/// Every frame sent or received looks its stream up, several times per call on each side. `Dictionary` hashes
/// each `UInt32` key with seeded SipHash, which took about 1.5 % of a busy connection's CPU time; this table hashes
/// by one multiplication (Fibonacci hashing: the top bits of `id × 2^32/φ`), which spreads the consecutive ids a
/// connection hands out evenly, and probes linearly. Keys a peer could choose to collide cost at most a scan of
/// the open streams, which `maxConcurrentStreams` bounds. Removal shifts the following entries back instead of
/// leaving tombstones, so lookups never slow down with churn; the table grows when half full and shrinks only
/// when emptied with `removeAll()`.
struct StreamTable<Value> {
    /// An empty slot; stream ids are 32-bit, so no id is this.
    private static var empty: UInt64 { .max }

    /// One array, not one for keys and one for values: a lookup then holds on to one buffer, not two.
    private var slots: [Slot]
    /// Capacity minus one (the capacity is a power of two).
    private var mask: Int
    /// 32 minus log2 of the capacity: the hash keeps the product's top bits.
    private var shift: UInt32
    private(set) var count = 0

    init() {
        self.init(capacity: 16)
    }

    private init(capacity: Int) {
        slots = Array(repeating: Slot(key: Self.empty, value: nil), count: capacity)
        mask = capacity - 1
        shift = 32 - UInt32(capacity.trailingZeroBitCount)
    }

    var isEmpty: Bool { count == 0 }

    /// The ids in the table, in no particular order.
    var ids: [UInt32] {
        slots.compactMap { $0.key == Self.empty ? nil : UInt32(truncatingIfNeeded: $0.key) }
    }

    /// The slot holding `id`, for reading and changing its value in place with `subscript(slot:)`.
    func index(forKey id: UInt32) -> Int? {
        var slot = home(of: id)
        while true {
            let key = slots[slot].key
            if key == UInt64(id) { return slot }
            if key == Self.empty { return nil }
            slot = (slot + 1) & mask
        }
    }

    /// The value in a slot that `index(forKey:)` returned, before the table changed in any other way.
    subscript(slot slot: Int) -> Value {
        get { slots[slot].value! }
        _modify { yield &slots[slot].value! }
    }

    /// A copy of the value for `id`. To use a field of a value that holds references, `update` reaches it in
    /// place, without copying (and retaining) the whole value or holding on to the table's buffer.
    subscript(id: UInt32) -> Value? {
        get {
            guard let slot = index(forKey: id) else { return nil }
            return slots[slot].value
        }
        set {
            if let newValue {
                insert(newValue, for: id)
            } else {
                _ = removeValue(forKey: id)
            }
        }
    }

    /// Runs `body` on the value for `id` in place; nil when `id` is not in the table.
    mutating func update<Result>(_ id: UInt32, _ body: (inout Value) throws -> Result) rethrows -> Result? {
        guard let slot = index(forKey: id) else { return nil }
        return try body(&slots[slot].value!)
    }

    func contains(_ id: UInt32) -> Bool {
        index(forKey: id) != nil
    }

    @discardableResult
    mutating func removeValue(forKey id: UInt32) -> Value? {
        guard let slot = index(forKey: id) else { return nil }
        return remove(at: slot)
    }

    /// Removes the value in `slot` (from `index(forKey:)`) and returns it.
    @discardableResult
    mutating func remove(at slot: Int) -> Value {
        let value = slots[slot].value.take()!
        count -= 1
        // Shift back each following entry of the run that may move into the hole: one whose home slot is not
        // between the hole and itself (cyclically), so that every entry stays reachable from its home.
        var hole = slot
        var next = (slot + 1) & mask
        while slots[next].key != Self.empty {
            let home = home(of: UInt32(truncatingIfNeeded: slots[next].key))
            if (next - home) & mask >= (next - hole) & mask {
                slots[hole].key = slots[next].key
                slots[hole].value = slots[next].value.take()
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole].key = Self.empty
        return value
    }

    mutating func removeAll() {
        self = StreamTable()
    }

    private mutating func insert(_ value: consuming Value, for id: UInt32) {
        if let slot = index(forKey: id) {
            slots[slot].value = value
            return
        }
        if (count + 1) * 2 > slots.count { grow() }
        var slot = home(of: id)
        while slots[slot].key != Self.empty { slot = (slot + 1) & mask }
        slots[slot] = Slot(key: UInt64(id), value: value)
        count += 1
    }

    private mutating func grow() {
        var larger = StreamTable(capacity: slots.count * 2)
        for slot in slots.indices where slots[slot].key != Self.empty {
            larger.insert(slots[slot].value.take()!, for: UInt32(truncatingIfNeeded: slots[slot].key))
        }
        self = larger
    }

    fileprivate struct Slot {
        var key: UInt64
        var value: Value?
    }

    private func home(of id: UInt32) -> Int {
        Int(truncatingIfNeeded: (id &* 0x9E37_79B9) >> shift)
    }
}

extension StreamTable: Sendable where Value: Sendable {}

extension StreamTable.Slot: Sendable where Value: Sendable {}
