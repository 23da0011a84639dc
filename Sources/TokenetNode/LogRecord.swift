import Foundation

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
        var line = "\(LogTimestamp.format(timestamp)) \(levelColumn) \(node): \(maskPAN(message))"
        for field in allFields {
            line += " \(field.key)=\(Self.textValue(maskPAN(field.value)))"
        }
        return line
    }

    /// `{"ts":"…","level":"info","node":"tsp-node","msg":"…","key":"value","trace_id":"…"}`
    private var renderedJSON: String {
        var pairs = [
            ("ts", LogTimestamp.format(timestamp)), ("level", level.name), ("node", node), ("msg", maskPAN(message)),
        ]
        let reserved = Set(pairs.map(\.0))
        for field in allFields {
            // A field may not overwrite the record's own keys; JSON readers would keep only one of them.
            let key = reserved.contains(field.key) ? "field_\(field.key)" : field.key
            pairs.append((key, maskPAN(field.value)))
        }
        let body = pairs.map { "\(Self.jsonString($0.0)):\(Self.jsonString($0.1))" }.joined(separator: ",")
        return "{\(body)}"
    }

    /// Quotes text values that would otherwise be ambiguous in `key=value` form.
    static func textValue(_ value: String) -> String {
        let needsQuotes =
            value.isEmpty || value.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline || $0 == "\\" }
        guard needsQuotes else { return value }
        return jsonString(value)
    }

    /// A JSON string literal, escaping quotes, backslashes and control characters.
    static func jsonString(_ value: String) -> String {
        var result = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let control where control.value < 0x20:
                result += String(format: "\\u%04x", control.value)
            default:
                result.unicodeScalars.append(scalar)
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
