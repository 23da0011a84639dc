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
        for entry in wire {
            let key = entry.key
            guard Self.isValidKey(key) else {
                return "metadata key \(Self.shown(key)) is not valid: keys are lowercase ASCII letters, digits, "
                    + "'-', '_' and '.'"
            }
            guard key.utf8.starts(with: Self.reservedPrefix.utf8) else { continue }
            guard key == Self.traceIDKey else {
                return "metadata key \(Self.shown(key)) uses the prefix \(Self.reservedPrefix), which is reserved "
                    + "for the runtime's own keys (\(Self.traceIDKey))"
            }
            guard case .text(let traceID)? = entry.value, Self.isValidTraceID(traceID) else {
                return "\(Self.traceIDKey) must be \(Self.traceIDLengths.lowerBound) to "
                    + "\(Self.traceIDLengths.upperBound) lowercase hex digits with at least one of a-f"
            }
        }
        return nil
    }

    /// The lengths a trace id may have: Tokenet makes 15 digits; other tracers' 16- and 32-digit ids fit too.
    public static let traceIDLengths = 8...32

    /// Whether `text` is a trace id a node will carry: lowercase hex of an accepted length, with a letter so that
    /// the logs' card-number masking (runs of 13 to 19 decimal digits) never hides it.
    public static func isValidTraceID(_ text: String) -> Bool {
        let bytes = text.utf8
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

    /// A key as a message may show it: quoted with escapes, and cut short when long.
    private static func shown(_ key: String) -> String {
        let prefix = key.unicodeScalars.prefix(64)
        let text = String(String.UnicodeScalarView(prefix)).debugDescription
        return prefix.count < key.unicodeScalars.count ? text + " (cut short)" : text
    }
}
