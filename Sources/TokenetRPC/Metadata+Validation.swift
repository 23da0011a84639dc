import TokenetTransport

/// What a server accepts in a call's metadata.
///
/// Keys that start with `tokenet-` belong to the runtime: a peer may send only the ones the runtime knows (the
/// trace id), and only in their format. Without the check a client could pass any text on as the trace id, which
/// every node then copies into its log lines and into the calls it makes; a card number given as the trace id
/// would be masked in every line, and the flow would lose its id.
extension Metadata {
    /// Why these metadata, as received from a peer, are refused; nil when they are acceptable. The message names
    /// the key but never echoes a value (it could be anything, a card number included).
    public var problem: String? {
        if case .failure(let refusal) = checked() { return refusal.message }
        return nil
    }

    /// A refusal of received metadata (see `problem`).
    struct Refusal: Error {
        let message: String
    }

    /// The check a server makes of a call's metadata, in one pass: the trace id the call carries (the first, as
    /// `traceID` reads it), or why the metadata are refused. Reading the trace id in the same pass saves a second
    /// walk and its string comparisons on every call served.
    func checked() -> Result<String?, Refusal> {
        // Read in place: iterating the array would copy each entry (a retain and a release of its key and value).
        wire.withUnsafeBufferPointer { entries in
            var traceID: String?
            for entry in entries.indices {
                let key = entries[entry].key
                switch Self.kind(of: key) {
                case .invalid:
                    return .failure(
                        Refusal(
                            message: "metadata key \(Self.shown(key)) is not valid: keys are lowercase ASCII letters, "
                                + "digits, '-', '_' and '.'"))
                case .application:
                    if case .text(let text)? = entries[entry].value, Self.holdsControlCharacter(text) {
                        return .failure(
                            Refusal(
                                message: "the value of metadata key \(Self.shown(key)) holds a control character or "
                                    + "line separator (a line break, a tab…): text values are printable text, and bytes "
                                    + "go in a key ending in -bin"))
                    }
                case .reserved:
                    return .failure(
                        Refusal(
                            message: "metadata key \(Self.shown(key)) uses the prefix \(Self.reservedPrefix), which "
                                + "is reserved for the runtime's own keys (\(Self.traceIDKey))"))
                case .traceID:
                    guard case .text(let text)? = entries[entry].value, Self.isValidTraceID(text) else {
                        return .failure(
                            Refusal(
                                message: "\(Self.traceIDKey) must be \(Self.traceIDLengths.lowerBound) to "
                                    + "\(Self.traceIDLengths.upperBound) lowercase hex digits with at least one of a-f"
                            ))
                    }
                    // Two different ids would put one call's lines under one flow and the calls it makes under
                    // another, depending on which entry each reader took.
                    if let first = traceID, first != text {
                        return .failure(
                            Refusal(
                                message: "the call carries two different \(Self.traceIDKey) values: a call belongs to "
                                    + "one flow, so send one"))
                    }
                    traceID = text
                }
            }
            return .success(traceID)
        }
    }

    /// The first valid trace id among the entries, whatever else they hold: a call refused for its metadata is
    /// still logged under the trace id its caller sent (it was logged under a new one, so the caller's id found
    /// nothing in the node's log).
    var anyValidTraceID: String? {
        for entry in wire where entry.key == Self.traceIDKey {
            if case .text(let text)? = entry.value, Self.isValidTraceID(text) { return text }
        }
        return nil
    }

    /// What a received key is, found in one pass over its bytes.
    enum KeyKind: Equatable {
        case invalid
        /// Valid, and outside the reserved prefix.
        case application
        /// `traceIDKey`.
        case traceID
        /// Valid, starting with `reservedPrefix`, and not a key the runtime knows.
        case reserved
    }

    /// Checked on every call a server accepts, in the string's own UTF-8 storage: walking `String.UTF8View` byte by
    /// byte, and comparing the prefix through it, cost about 1,300 instructions per call for the trace id alone.
    static func kind(of key: String) -> KeyKind {
        if let kind = key.utf8.withContiguousStorageIfAvailable(kind(ofUTF8:)) { return kind }
        return Array(key.utf8).withUnsafeBufferPointer(kind(ofUTF8:))
    }

    private static func kind(ofUTF8 bytes: UnsafeBufferPointer<UInt8>) -> KeyKind {
        guard !bytes.isEmpty else { return .invalid }
        for byte in bytes where !isKeyByte(byte) { return .invalid }
        let prefix = reservedPrefixBytes
        guard bytes.count >= prefix.count else { return .application }
        for index in 0..<prefix.count where bytes[index] != prefix[index] { return .application }
        let traceID = traceIDKeyBytes
        guard bytes.count == traceID.count else { return .reserved }
        for index in prefix.count..<traceID.count where bytes[index] != traceID[index] { return .reserved }
        return .traceID
    }

    /// `reservedPrefix` and `traceIDKey` as bytes, for `kind(ofUTF8:)`.
    private static let reservedPrefixBytes = Array(reservedPrefix.utf8)
    private static let traceIDKeyBytes = Array(traceIDKey.utf8)

    /// Lowercase ASCII letters, digits, `-`, `_` and `.`.
    @inline(__always)
    static func isKeyByte(_ byte: UInt8) -> Bool {
        (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F || byte == 0x2E
    }

    /// The lengths a trace id may have: Tokenet makes 15 digits; other tracers' 16- and 32-digit ids fit too.
    public static let traceIDLengths = 8...32

    /// Whether `text` is a trace id a node will carry: lowercase hex of an accepted length, with a letter, so that
    /// the id is never digits alone. One that holds a run of decimal digits the logs' card-number masking takes for
    /// a card number is carried too, and shows masked there (`tokenet call` says so when given one).
    public static func isValidTraceID(_ text: String) -> Bool {
        if let valid = text.utf8.withContiguousStorageIfAvailable(isValidTraceID(utf8:)) { return valid }
        return Array(text.utf8).withUnsafeBufferPointer(isValidTraceID(utf8:))
    }

    private static func isValidTraceID(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard traceIDLengths.contains(bytes.count) else { return false }
        var hasLetter = false
        for byte in bytes {
            switch byte {
            case 0x30...0x39: continue
            case 0x61...0x66: hasLetter = true
            default: return false
            }
        }
        return hasLetter
    }

    /// Whether `text` holds a control character (C0, DEL or C1) or a Unicode line or paragraph separator. A handler
    /// may log or show a text value: a line break in it would forge log lines, and the CLI refuses to send one.
    static func holdsControlCharacter(_ text: String) -> Bool {
        if let found = text.utf8.withContiguousStorageIfAvailable(holdsControlCharacter(utf8:)) { return found }
        return Array(text.utf8).withUnsafeBufferPointer(holdsControlCharacter(utf8:))
    }

    private static func holdsControlCharacter(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in bytes.indices {
            let byte = bytes[index]
            if byte < 0x20 || byte == 0x7F { return true }
            // U+0080–U+009F: 0xC2 then 0x80–0x9F.
            if byte == 0xC2, index + 1 < bytes.count, (0x80...0x9F).contains(bytes[index + 1]) { return true }
            // U+2028 and U+2029, which some viewers break lines at: 0xE2 0x80 0xA8 or 0xA9.
            if byte == 0xE2, index + 2 < bytes.count, bytes[index + 1] == 0x80, (0xA8...0xA9).contains(bytes[index + 2])
            {
                return true
            }
        }
        return false
    }

    /// A key as a message may show it: quoted with escapes, and cut short when long.
    private static func shown(_ key: String) -> String {
        guard let kept = ShownPrefix.cut(key, scalarLimit: 64) else { return key.debugDescription }
        return kept.debugDescription + " (cut short)"
    }
}
