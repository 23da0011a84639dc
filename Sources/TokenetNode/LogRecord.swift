import Foundation
import TokenetWire

/// One log event, rendered to a single line of text or JSON.
///
/// Rendering is where PAN masking happens, so every way of logging goes through it and none can leak a card number.
public struct LogRecord: Sendable, Equatable {
    public var timestamp: Date
    public var level: LogLevel
    public var node: String
    public var message: String
    public var traceID: String?
    public var fields: [LogField]

    public init(
        timestamp: Date, level: LogLevel, node: String, message: String, traceID: String?, fields: [LogField]
    ) {
        self.timestamp = timestamp
        self.level = level
        self.node = node
        self.message = message
        self.traceID = traceID
        self.fields = fields
    }

    /// The fields in output order: the caller's, then the trace id.
    private var allFields: [LogField] {
        fields + (traceID.map { [LogField("trace_id", $0)] } ?? [])
    }

    public func rendered(as format: LogFormat) -> String {
        switch format {
        case .text: return renderedText
        case .json: return renderedJSON
        }
    }

    /// `2026-11-30T04:25:50.123Z info    tsp-node: message key=value trace_id=…`
    private var renderedText: String {
        let levelColumn = level.name.padding(toLength: 7, withPad: " ", startingAt: 0)
        let text = Self.capped(maskPAN(message), at: Self.messageLimit)
        var line = "\(LogTimestamp.format(timestamp)) \(levelColumn) \(node): \(Self.escapingInvisibles(text))"
        for field in allFields {
            line += " \(field.key)=\(Self.textValue(Self.capped(maskPAN(field.value), at: Self.limit(of: field.key))))"
        }
        return line
    }

    /// `{"ts":"…","level":"info","node":"tsp-node","msg":"…","key":"value","trace_id":"…"}`
    private var renderedJSON: String {
        var pairs = [
            ("ts", LogTimestamp.format(timestamp)), ("level", level.name), ("node", node),
            ("msg", Self.capped(maskPAN(message), at: Self.messageLimit)),
        ]
        let reserved = Set(pairs.map(\.0))
        for field in allFields {
            // A field may not overwrite the record's own keys; JSON readers would keep only one of them.
            let key = reserved.contains(field.key) ? "field_\(field.key)" : field.key
            pairs.append((key, Self.capped(maskPAN(field.value), at: Self.limit(of: field.key))))
        }
        let body = pairs.map { "\(Self.jsonString($0.0)):\(Self.jsonString($0.1))" }.joined(separator: ",")
        return "{\(body)}"
    }

    /// The most characters of a message, and of one field's value, a line shows: a peer's 100 KB identifier or error
    /// text would otherwise fill the log with one line per call and bury the lines around it.
    static let messageLimit = 4096
    static let fieldLimit = 1024
    /// A message's body at `trace` (`body`): a message is what that level is for, so it may run longer.
    static let bodyLimit = 16384

    static func limit(of key: String) -> Int { key == "body" ? bodyLimit : fieldLimit }

    /// `text` cut to `limit` characters, saying how many more there were. Cut after masking, so that a cut card
    /// number is still masked (cut first, its first digits could be too few to read as one).
    static func capped(_ text: String, at limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let total = text.count
        guard total > limit else { return text }
        return "\(text.prefix(limit))… (\(total - limit) more characters)"
    }

    /// Quotes text values that would otherwise be ambiguous in `key=value` form, or that hold characters a terminal
    /// would act on or not show.
    static func textValue(_ value: String) -> String {
        let needsQuotes =
            value.isEmpty || value.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline || $0 == "\\" }
            || value.unicodeScalars.contains(where: isInvisible)
        guard needsQuotes else { return value }
        return jsonString(value)
    }

    /// Whether a log line writes `scalar` as an escape (`Unicode.Scalar.isInvisibleInText`): a peer's text could
    /// otherwise clear the screen, reorder the line, or split a card number where nobody sees the split.
    static func isInvisible(_ scalar: Unicode.Scalar) -> Bool { scalar.isInvisibleInText }

    /// `scalar` as a JSON escape: `\u007f`, or the two UTF-16 halves of one beyond the Basic Multilingual Plane.
    private static func escape(_ scalar: Unicode.Scalar) -> String {
        String(scalar).utf16.map { String(format: "\\u%04x", $0) }.joined()
    }

    /// The text of a log message with its invisible characters (`isInvisible`) escaped, unquoted.
    static func escapingInvisibles(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isInvisible) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isInvisible(scalar) { result += escape(scalar) } else { result.unicodeScalars.append(scalar) }
        }
        return result
    }

    /// A JSON string literal, escaping quotes, backslashes and invisible characters (`isInvisible`).
    static func jsonString(_ value: String) -> String {
        var result = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let invisible where isInvisible(invisible): result += escape(invisible)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

/// A `key=value` pair attached to a log line.
public struct LogField: Sendable, Equatable {
    public var key: String
    public var value: String

    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}
