import Foundation
import Synchronization
import TokenetWire

/// Request or response metadata: ordered entries whose keys may repeat, each holding text or binary.
public struct Metadata: Hashable, Sendable, ExpressibleByDictionaryLiteral {
    public typealias Key = String

    public enum Entry: Hashable, Sendable {
        case text(String)
        case binary(Data)
    }

    /// Keys starting with this prefix belong to the runtime.
    public static let reservedPrefix = "tokenet-"
    /// The trace id shared by every call of one flow, across every node.
    public static let traceIDKey = "tokenet-trace-id"

    /// The entries as they travel in `CallStart`, keys normalized: kept in this form so that sending metadata
    /// and receiving it adopt the array as it is, with no conversion (and allocation) on every call.
    private(set) var wire: [WireV1.MetadataEntry] = []

    public var entries: [(key: String, value: Entry)] {
        wire.map { ($0.key, Self.entry($0.value)) }
    }

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (key, value) in elements { add(key, .text(value)) }
    }

    public mutating func add(_ key: String, _ value: Entry) {
        wire.append(WireV1.MetadataEntry(key: Self.normalized(key), value: Self.wireValue(value)))
    }

    /// Replaces every entry under `key` with one.
    public mutating func set(_ key: String, _ value: Entry) {
        set(normalizedKey: Self.normalized(key), value)
    }

    /// The first text value under `key`.
    public subscript(text key: String) -> String? {
        text(normalizedKey: Self.normalized(key))
    }

    /// Read and set on every call a client makes: their key is lowercase already, so they skip `normalized`.
    public var traceID: String? { text(normalizedKey: Metadata.traceIDKey) }

    public mutating func setTraceID(_ traceID: String) {
        set(normalizedKey: Metadata.traceIDKey, .text(traceID))
    }

    private mutating func set(normalizedKey key: String, _ value: Entry) {
        if !wire.isEmpty { wire.removeAll { $0.key == key } }
        wire.append(WireV1.MetadataEntry(key: key, value: Self.wireValue(value)))
    }

    private func text(normalizedKey key: String) -> String? {
        for entry in wire where entry.key == key {
            if case .text(let text)? = entry.value { return text }
        }
        return nil
    }

    /// `key` in lowercase, for keys a caller adds (lookups too). They are almost always lowercase already (the
    /// runtime's own among them), so they are checked first and kept as they are, without the new string
    /// `lowercased()` would build on every call.
    static func normalized(_ key: String) -> String {
        isNormalized(key) ? key : key.lowercased()
    }

    /// Whether `key` is lowercase already (`normalized` would return it as it is).
    static func isNormalized(_ key: String) -> Bool {
        if key == traceIDKey { return true }
        return !key.utf8.contains { byte in (byte >= 0x41 && byte <= 0x5A) || byte >= 0x80 }
    }

    /// Whether `key` is a valid metadata key: lowercase ASCII letters, digits, `-`, `_` and `.`.
    public static func isValidKey(_ key: String) -> Bool {
        kind(of: key) != .invalid
    }

    public static func == (lhs: Metadata, rhs: Metadata) -> Bool {
        lhs.wire == rhs.wire
    }

    public func hash(into hasher: inout Hasher) {
        for entry in wire {
            hasher.combine(entry.key)
            hasher.combine(Self.entry(entry.value))
        }
    }

    /// Metadata received in a `CallStart`, the array kept as it is. Keys stay as the peer wrote them: one that is
    /// not lowercase breaks the protocol, and the server refuses it (`problem`) rather than quietly lowercasing it,
    /// so that a party under test hears of its mistake here and not from a stricter peer later. An entry with no
    /// value reads as empty text.
    init(wire: [WireV1.MetadataEntry]) {
        self.wire = wire
        // Checked in place: copying each entry out to look at it cost a retain and a release of its key and value.
        for index in wire.indices where wire[index].value == nil {
            self.wire[index] = WireV1.MetadataEntry(key: wire[index].key, value: .text(""))
        }
    }

    private static func wireValue(_ entry: Entry) -> WireV1.MetadataEntry.Value {
        switch entry {
        case .text(let text): .text(text)
        case .binary(let data): .binary(data)
        }
    }

    private static func entry(_ value: WireV1.MetadataEntry.Value?) -> Entry {
        switch value {
        case .text(let text)?: .text(text)
        case .binary(let data)?: .binary(data)
        case nil: .text("")
        }
    }

    /// A new random trace id: 15 lowercase hex digits, the eighth always a letter (about 58.6 random bits).
    ///
    /// Logs mask every run of 13 or more decimal digits as a possible card number, and a trace id must stay readable
    /// in every line, or one flow can no longer be followed across the nodes' logs. A letter somewhere was not enough:
    /// `a` followed by fourteen digits still holds such a run (about one id in 300 did). With the letter in the middle
    /// no run is longer than seven digits.
    /// Formatted by hand into one small string (it is made for every call that starts a flow). Fifteen digits,
    /// not sixteen, because a Swift string of up to 15 ASCII bytes is stored inline: the id costs no allocation
    /// where it is made, nor where each hop decodes it from the call's metadata.
    public static func newTraceID() -> String {
        traceID(TraceIDSource.next())
    }

    /// The trace id of `value`: its bits 32–59 as seven hex digits, a letter a–f from its top four bits, then its low
    /// 28 bits as seven hex digits. The digits are made eight at a time in a `UInt64` (one nibble per byte, then '0'
    /// or 'a' added without a branch), which made the formatting cheap next to the call.
    static func traceID(_ value: UInt64) -> String {
        let high = hexDigits(UInt32(truncatingIfNeeded: value >> 32) & 0x0FFF_FFFF)  // 7 digits after a '0'
        let low = hexDigits(UInt32(truncatingIfNeeded: value) & 0x0FFF_FFFF)  // 7 digits after a '0'
        // Six letters from sixteen values: a slight bias towards a–d, of no matter for an id that needs no secrecy.
        let letter = UInt8(ascii: "a") &+ UInt8(truncatingIfNeeded: value >> 60) % 6
        return String(unsafeUninitializedCapacity: traceIDLength) { buffer in
            let start = UnsafeMutableRawPointer(buffer.baseAddress!)
            withUnsafeBytes(of: high) { start.copyMemory(from: $0.baseAddress! + 1, byteCount: 7) }
            buffer[7] = letter
            withUnsafeBytes(of: low) { (start + 8).copyMemory(from: $0.baseAddress! + 1, byteCount: 7) }
            return traceIDLength
        }
    }

    /// The eight lowercase hex digits of `value`, most significant first in memory order.
    private static func hexDigits(_ value: UInt32) -> UInt64 {
        // Spread the nibbles one to a byte: nibble i (from the least significant) lands in byte i.
        var spread = UInt64(value)
        spread = (spread & 0x0000_0000_FFFF_0000) << 16 | (spread & 0x0000_0000_0000_FFFF)
        spread = (spread & 0x0000_FF00_0000_FF00) << 8 | (spread & 0x0000_00FF_0000_00FF)
        spread = (spread & 0x00F0_00F0_00F0_00F0) << 4 | (spread & 0x000F_000F_000F_000F)
        // 0x01 in each byte whose nibble is 10 or more: adding 6 carries it into bit 4.
        let letters = ((spread &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        // '0' + nibble, and 'a' - '0' - 10 = 39 more for a letter; no byte carries into the next.
        let ascii = spread &+ 0x3030_3030_3030_3030 &+ letters &* 39
        // Byte i holds nibble i: stored big-endian, the most significant digit comes first in memory.
        return ascii.bigEndian
    }

    static let traceIDLength = 15
}

/// Trace ids only need to be unique and spread out, not secret: a SplitMix64 sequence over an atomic counter,
/// seeded once from the system generator, avoids a `getrandom` system call on every call that starts a flow.
enum TraceIDSource {
    private static let seed = UInt64.random(in: 1...UInt64.max)
    private static let counter = Atomic<UInt64>(0)

    static func next() -> UInt64 {
        let count = counter.add(1, ordering: .relaxed).newValue
        var z = seed &+ count &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return z == 0 ? 1 : z
    }
}
