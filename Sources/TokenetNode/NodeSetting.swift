/// One setting read from the command line or a config file, before it is applied to `NodeOptions`.
struct NodeSetting: Sendable, Equatable {
    enum Value: Sendable, Equatable {
        case string(String)
        case bool(Bool)
    }

    /// Where a setting came from, so error messages point at the right place.
    enum Origin: Sendable, Equatable {
        case flag
        case configFile(path: String)
    }

    var key: NodeOptionKey
    var value: Value
    var origin: Origin

    /// `--issuer ID=HOST:PORT`: one issuer's address, which may be given once for each issuer.
    var isIssuerRoute: Bool {
        guard key == .issuer, case .string(let text) = value else { return false }
        return text.contains("=")
    }

    /// The value as messages quote it.
    var valueText: String {
        switch value {
        case .string(let text): return "'\(text)'"
        case .bool(let flag): return String(flag)
        }
    }

    /// How messages name this setting: `--listen` or `"listen" in node.json`.
    var label: String {
        switch origin {
        case .flag: return key.flag
        case .configFile(let path): return "\"\(key.rawValue)\" in \(path)"
        }
    }
}
