import Foundation

/// One result row: its values in column order and the column names of the statement that produced it.
///
/// Typed reads throw a `StorageError` rather than trapping: `.misuse` for a column index or name the query does not
/// have, `.mismatch` when the stored value does not have the requested type (NULL included: read an `Optional`).
public struct Row: Sendable, Hashable {
    public let values: [SQLValue]
    private let columns: ColumnNames

    init(values: [SQLValue], columns: ColumnNames) {
        self.values = values
        self.columns = columns
    }

    public var columnNames: [String] { columns.names }
    public var count: Int { values.count }

    /// The raw value at a zero-based column index.
    public func value(_ index: Int) throws -> SQLValue {
        guard values.indices.contains(index) else {
            throw StorageError(.misuse, "column index \(index) is out of range (the row has \(values.count) columns)")
        }
        return values[index]
    }

    /// The raw value of the first column with this name (as SQLite names it: the alias after `AS` if there is one).
    public func value(_ name: String) throws -> SQLValue {
        guard let index = columns.index[name] else {
            throw StorageError(.misuse, "no column named '\(name)' (columns: \(columns.names.joined(separator: ", ")))")
        }
        return values[index]
    }

    /// The value at `index` as `T`: `try row.get(0) as String?`.
    public func get<T: SQLValueConvertible>(_ index: Int, as type: T.Type = T.self) throws -> T {
        try convert(value(index), column: "\(index)", to: type)
    }

    /// The value of the column `name` as `T`: `let note: String? = try row.get("note")`.
    public func get<T: SQLValueConvertible>(_ name: String, as type: T.Type = T.self) throws -> T {
        try convert(value(name), column: "'\(name)'", to: type)
    }

    public func int(_ index: Int) throws -> Int { try get(index) }
    public func int(_ name: String) throws -> Int { try get(name) }
    public func int64(_ index: Int) throws -> Int64 { try get(index) }
    public func int64(_ name: String) throws -> Int64 { try get(name) }
    public func double(_ index: Int) throws -> Double { try get(index) }
    public func double(_ name: String) throws -> Double { try get(name) }
    public func bool(_ index: Int) throws -> Bool { try get(index) }
    public func bool(_ name: String) throws -> Bool { try get(name) }
    public func text(_ index: Int) throws -> String { try get(index) }
    public func text(_ name: String) throws -> String { try get(name) }
    public func blob(_ index: Int) throws -> [UInt8] { try get(index) }
    public func blob(_ name: String) throws -> [UInt8] { try get(name) }
    public func data(_ index: Int) throws -> Data { try get(index) }
    public func data(_ name: String) throws -> Data { try get(name) }
    public func isNull(_ index: Int) throws -> Bool { try value(index) == .null }
    public func isNull(_ name: String) throws -> Bool { try value(name) == .null }

    private func convert<T: SQLValueConvertible>(_ value: SQLValue, column: String, to type: T.Type) throws -> T {
        guard let converted = T(sqlValue: value) else {
            throw StorageError(.mismatch, "column \(column) holds \(value.typeName), which does not read as \(T.self)")
        }
        return converted
    }
}

/// The column names of a statement, shared by all rows it returns so each row does not copy them.
final class ColumnNames: Sendable, Hashable {
    let names: [String]
    /// The first index of each name; a later duplicate (`SELECT a.id, b.id`) is reachable by index only.
    let index: [String: Int]

    init(_ names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil {
            index[name] = position
        }
        self.index = index
    }

    static func == (lhs: ColumnNames, rhs: ColumnNames) -> Bool { lhs.names == rhs.names }
    func hash(into hasher: inout Hasher) { hasher.combine(names) }
}
