/// How much a node logs. Ordered from most to least verbose.
public enum LogLevel: Int, CaseIterable, Comparable, Sendable {
    case trace
    case debug
    case info
    case warning
    case error

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The spelling used by `--log-level` and in log lines.
    public var name: String {
        switch self {
        case .trace: return "trace"
        case .debug: return "debug"
        case .info: return "info"
        case .warning: return "warning"
        case .error: return "error"
        }
    }

    public init?(name: String) {
        guard let level = LogLevel.allCases.first(where: { $0.name == name }) else { return nil }
        self = level
    }
}

/// How log lines are written: human-readable text or one JSON object per line for log collectors.
public enum LogFormat: String, CaseIterable, Sendable {
    case text
    case json
}
