/// Values ordered by deadline, the earliest first: a binary min-heap. Values with equal deadlines come out in no
/// particular order.
///
/// Why a heap: the event loop looks at its earliest timer on every iteration, and a connection keeps one deadline
/// per call in flight. Both need the earliest in O(1) and an insertion in O(log n); nothing needs the rest sorted.
/// Removing a value that is not the earliest is left to its owner: it forgets the value (a cancelled timer, a
/// finished call), skips it when it comes to the top, and calls `removeAll(where:)` now and then so forgotten
/// values never pile up.
///
/// Inlinable so that it is specialized for its value type where it is used: a generic heap called across the module
/// boundary instantiated its type metadata at run time on every call.
public struct DeadlineHeap<Value>: Sendable where Value: Sendable {
    public typealias Instant = ContinuousClock.Instant

    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline var deadline: Instant
        @usableFromInline var value: Value

        @inlinable
        init(deadline: Instant, value: Value) {
            self.deadline = deadline
            self.value = value
        }

        @inlinable
        func precedes(_ other: Entry) -> Bool { deadline < other.deadline }
    }

    @usableFromInline var entries: [Entry] = []

    @inlinable
    public init() {}

    @inlinable
    public var count: Int { entries.count }
    @inlinable
    public var isEmpty: Bool { entries.isEmpty }

    /// The value with the earliest deadline, and that deadline.
    ///
    /// Read by index, not through `entries.first`: the optional `Entry` that `first` returns was handled through
    /// its type's enum-tag functions, about 400 instructions per loop iteration on a client with a timer set.
    @inlinable
    public var earliest: (deadline: Instant, value: Value)? {
        guard !entries.isEmpty else { return nil }
        return (entries[0].deadline, entries[0].value)
    }

    @inlinable
    public mutating func insert(_ value: Value, deadline: Instant) {
        entries.append(Entry(deadline: deadline, value: value))
        siftUp(entries.count - 1)
    }

    /// Removes and returns the earliest value.
    @inlinable @discardableResult
    public mutating func removeEarliest() -> (deadline: Instant, value: Value)? {
        guard !entries.isEmpty else { return nil }
        let last = entries.removeLast()
        guard !entries.isEmpty else { return (last.deadline, last.value) }
        let first = entries[0]
        entries[0] = last
        siftDown(0)
        return (first.deadline, first.value)
    }

    /// Removes and returns the earliest value if its deadline is at or before `now`.
    @inlinable
    public mutating func removeDue(at now: Instant) -> Value? {
        guard !entries.isEmpty, entries[0].deadline <= now else { return nil }
        return removeEarliest()?.value
    }

    /// Drops every value `shouldRemove` picks, keeping the order of the rest: O(n).
    @inlinable
    public mutating func removeAll(where shouldRemove: (Value) throws -> Bool) rethrows {
        try entries.removeAll { try shouldRemove($0.value) }
        // Floyd's construction: sift down every parent, the last one first.
        var index = entries.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    @inlinable
    public mutating func removeAll() {
        entries.removeAll()
    }

    @inlinable
    mutating func siftUp(_ start: Int) {
        var child = start
        let moving = entries[child]
        while child > 0 {
            let parent = (child - 1) / 2
            guard moving.precedes(entries[parent]) else { break }
            entries[child] = entries[parent]
            child = parent
        }
        entries[child] = moving
    }

    @inlinable
    mutating func siftDown(_ start: Int) {
        var parent = start
        let moving = entries[parent]
        let count = entries.count
        while true {
            var child = 2 * parent + 1
            guard child < count else { break }
            if child + 1 < count, entries[child + 1].precedes(entries[child]) { child += 1 }
            guard entries[child].precedes(moving) else { break }
            entries[parent] = entries[child]
            parent = child
        }
        entries[parent] = moving
    }
}
