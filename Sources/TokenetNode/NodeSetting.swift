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

    /// How messages name this setting: `--listen` or `"listen" in node.json`.
    var label: String {
        switch origin {
        case .flag: return key.flag
        case .configFile(let path): return "\"\(key.rawValue)\" in \(path)"
        }
    }
}
