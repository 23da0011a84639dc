import Foundation

/// Reads a node's JSON config file into settings.
///
/// The file is a flat object whose keys are the flag names without dashes, for example
/// `{"listen": "127.0.0.1:7001", "issuer": "127.0.0.1:7002", "log-level": "debug", "plaintext": false}`;
/// the numeric settings (`idle-poll-us`, `keepalive`, `keepalive-timeout`, `idle-timeout`, `drain-timeout`,
/// `peer-connections`, `address-handshakes`) may be numbers, and tsp-node's `issuer` may be a list (`["tokenet-bank=127.0.0.1:7002", "127.0.0.1:7003"]`, as the
/// option repeated).
/// Unknown keys are errors rather than being ignored, so a typo cannot silently fall back to a default; so are a key
/// given twice and a trailing comma (`StrictJSON`).
public enum NodeConfigFile {
    /// A config value: strings, booleans, and numbers for the numeric settings.
    private enum Scalar: Decodable {
        case string(String)
        case bool(Bool)
        case integer(Int)
        case decimal(Double)
        case strings([String])
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let flag = try? container.decode(Bool.self) {
                self = .bool(flag)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else if let number = try? container.decode(Int.self) {
                self = .integer(number)
            } else if let number = try? container.decode(Double.self) {
                self = .decimal(number)
            } else if let list = try? container.decode([String].self) {
                self = .strings(list)
            } else {
                self = .other
            }
        }
    }

    static func settings(from data: Data, path: String, spec: NodeSpec) throws(NodeError) -> [NodeSetting] {
        // Bytes that are no UTF-8 in a string made it "must be a string".
        guard String(data: data, encoding: .utf8) != nil else {
            throw NodeError(.config, "config file \(path) is not UTF-8 text: JSON is written in UTF-8")
        }
        let dictionary: [String: Scalar]
        do {
            dictionary = try JSONDecoder().decode([String: Scalar].self, from: data)
        } catch {
            throw NodeError(
                .config, "config file \(path) must hold one JSON object",
                cause: DescribedError(decoding: error, of: data))
        }
        if let problem = StrictJSON.problem(in: data) {
            throw NodeError(.config, "config file \(path): \(problem)")
        }
        let allowed = NodeOptionKey.keys(for: spec).filter(\.allowedInConfigFile)
        var settings: [NodeSetting] = []
        for name in dictionary.keys.sorted() {
            guard let key = allowed.first(where: { $0.rawValue == name }) else {
                let known = allowed.map(\.rawValue).joined(separator: ", ")
                throw NodeError(
                    .config, "config file \(path): unknown key \"\(name)\" for \(spec.name) (known: \(known))")
            }
            // A NUL ends a path or an address where the system reads it: "a\u0000b" made directory "a", and every
            // check then looked at that one.
            let texts: [String] =
                switch dictionary[name]! {
                case .string(let text): [text]
                case .strings(let list): list
                default: []
                }
            if texts.contains(where: { $0.contains("\u{0}") }) {
                throw NodeError(
                    .config, "config file \(path): \"\(name)\" holds a NUL character (\\u0000), which no value may hold"
                )
            }
            if case .strings(let list) = dictionary[name]!, key == .issuer, spec.routesIssuersByID {
                settings += list.map { NodeSetting(key: key, value: .string($0), origin: .configFile(path: path)) }
                continue
            }
            let value: NodeSetting.Value
            switch (dictionary[name]!, key) {
            case (.bool(let flag), .plaintext):
                value = .bool(flag)
            case (.string(let text), let key) where key != .plaintext:
                value = .string(text)
            case (.integer(let number), let key) where key.isNumeric:
                value = .string(String(number))
            case (.decimal(let number), let key) where key.isNumeric && key != .idlePoll && key != .parentPID:
                value = .string(String(number))
            default:
                let expected =
                    key == .issuer && spec.routesIssuersByID
                    ? "a string or a list of strings"
                    : key == .plaintext
                        ? "true or false"
                        : key == .idlePoll || key == .parentPID
                            ? "a whole number" : key.isNumeric ? "a number or a string" : "a string"
                throw NodeError(.config, "config file \(path): \"\(name)\" must be \(expected)")
            }
            settings.append(NodeSetting(key: key, value: value, origin: .configFile(path: path)))
        }
        return settings
    }

    /// Reads the file's bytes from disk.
    public static func read(path: String) throws(NodeError) -> Data {
        // Foundation refuses a device, a pipe (`--config <(…)`, a FIFO) or a socket with "Permission denied", which
        // sends a person to check permissions that are fine (`--config /dev/null`).
        var status = stat()
        if stat(path, &status) == 0 {
            let kind: String? =
                switch status.st_mode & S_IFMT {
                case S_IFCHR, S_IFBLK: "a device"
                case S_IFIFO: "a pipe"
                case S_IFSOCK: "a socket"
                default: nil
                }
            if let kind {
                throw NodeError(.config, "cannot read config file \(path): it is \(kind), not a file; give a JSON file")
            }
        }
        if stat(path, &status) == 0, status.st_size > SettingsFile.maxBytes {
            throw NodeError(
                .config,
                "config file \(path) holds \(status.st_size) bytes; a config file holds at most \(SettingsFile.maxBytes) "
                    + "bytes")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw NodeError(.config, "cannot read config file \(path)", cause: DescribedError(error))
        }
    }
}
