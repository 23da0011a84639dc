import Foundation

/// A node's optional policy file in its data directory (`tsp-policy.json`, `issuer-policy.json`): one flat JSON
/// object of settings, each optional.
///
/// Unknown keys, wrong types, values out of range and a key given twice are configuration errors naming the file
/// and the key, so a typo never silently falls back to a default.
public struct PolicyFile: Sendable {
    public let path: String
    private let values: [String: Value]

    /// The file `name` in `dataDirectory`, or nil when there is none (the defaults apply); `keys` are the settings
    /// the file may hold.
    public static func read(
        _ name: String, dataDirectory: String, keys: Set<String>
    ) throws(NodeError) -> PolicyFile? {
        let path = (dataDirectory as NSString).appendingPathComponent(name)
        guard let data = try SettingsFile.read(path) else { return nil }
        return try PolicyFile(data, path: path, keys: keys)
    }

    init(_ data: Data, path: String, keys: Set<String>) throws(NodeError) {
        do {
            values = try JSONDecoder().decode([String: Value].self, from: data)
        } catch {
            throw NodeError(
                .config, "\(path) must hold one JSON object of policy settings",
                cause: DescribedError(decoding: error, of: data))
        }
        if let problem = StrictJSON.problem(in: data) { throw NodeError(.config, "\(path): \(problem)") }
        if let unknown = values.keys.sorted().first(where: { !keys.contains($0) }) {
            let known = keys.sorted().joined(separator: ", ")
            throw NodeError(.config, "\(path): unknown key \"\(unknown)\" (known: \(known))")
        }
        self.path = path
    }

    /// The whole number set for `key`, or nil when the file leaves it out; one outside `range` is an error.
    public func number(_ key: String, in range: ClosedRange<Int>, unit: String = "") throws(NodeError) -> Int? {
        guard let value = values[key] else { return nil }
        guard case .integer(let number) = value, range.contains(number) else {
            let what = unit.isEmpty ? "a whole number" : "a whole number of \(unit)"
            throw NodeError(
                .config, "\(path): \"\(key)\" must be \(what) from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// The boolean set for `key`, or nil when the file leaves it out (a 1 is not `true`).
    public func flag(_ key: String) throws(NodeError) -> Bool? {
        guard let value = values[key] else { return nil }
        guard case .bool(let flag) = value else {
            throw NodeError(.config, "\(path): \"\(key)\" must be true or false")
        }
        return flag
    }

    /// The string set for `key`, or nil when the file leaves it out; `valid` decides whether it is acceptable, and
    /// `expected` says what it should be when it is not.
    public func string(
        _ key: String, expected: String, valid: (String) -> Bool = { _ in true }
    ) throws(NodeError) -> String? {
        guard let value = values[key] else { return nil }
        guard case .string(let text) = value, valid(text) else {
            throw NodeError(.config, "\(path): \"\(key)\" must be \(expected)")
        }
        return text
    }

    /// A policy value: JSON integers and booleans are kept apart (a 1 is not `true`).
    private enum Value: Decodable {
        case bool(Bool)
        case integer(Int)
        case string(String)
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let flag = try? container.decode(Bool.self) {
                self = .bool(flag)
            } else if let number = try? container.decode(Int.self) {
                self = .integer(number)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else {
                self = .other
            }
        }
    }
}
