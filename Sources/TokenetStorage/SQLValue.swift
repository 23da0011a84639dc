import Foundation

/// One SQLite value: the five storage classes SQLite knows.
///
/// Blobs are `[UInt8]`; `Data` converts both ways through `SQLValueConvertible`. An empty blob stays an empty blob
/// (not NULL) on the way in and out.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// The value of any convertible Swift value, for building parameter lists: `SQLValue(name)`.
    public init(_ value: some SQLValueConvertible) {
        self = value.sqlValue
    }

    /// The storage class name SQLite uses (`NULL`, `INTEGER`, `REAL`, `TEXT`, `BLOB`), for error messages.
    public var typeName: String {
        switch self {
        case .null: return "NULL"
        case .integer: return "INTEGER"
        case .real: return "REAL"
        case .text: return "TEXT"
        case .blob: return "BLOB"
        }
    }

    public var isNull: Bool { self == .null }
}

extension SQLValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension SQLValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
}

/// A Swift type that can be bound as a statement parameter and read back from a column.
///
/// Reading is strict: a TEXT column does not turn into an `Int`, and NULL only reads as an `Optional`. The one
/// widening is INTEGER to `Double`: a whole number in a column without REAL affinity, or an expression such as
/// `SUM` over integers, comes back as INTEGER even where the caller thinks of it as a real number.
public protocol SQLValueConvertible {
    var sqlValue: SQLValue { get }
    /// The Swift value for `sqlValue`, or nil when the stored type does not fit.
    init?(sqlValue: SQLValue)
}

extension SQLValue: SQLValueConvertible {
    public var sqlValue: SQLValue { self }
    public init?(sqlValue: SQLValue) { self = sqlValue }
}

extension Int64: SQLValueConvertible {
    public var sqlValue: SQLValue { .integer(self) }
    public init?(sqlValue: SQLValue) {
        guard case .integer(let value) = sqlValue else { return nil }
        self = value
    }
}

extension Int: SQLValueConvertible {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
    public init?(sqlValue: SQLValue) {
        guard case .integer(let value) = sqlValue, let exact = Int(exactly: value) else { return nil }
        self = exact
    }
}

extension Int32: SQLValueConvertible {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
    public init?(sqlValue: SQLValue) {
        guard case .integer(let value) = sqlValue, let exact = Int32(exactly: value) else { return nil }
        self = exact
    }
}

extension Bool: SQLValueConvertible {
    /// Stored as INTEGER 0 or 1, SQLite's own convention.
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .integer(0): self = false
        case .integer(1): self = true
        default: return nil
        }
    }
}

extension Double: SQLValueConvertible {
    public var sqlValue: SQLValue { .real(self) }
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .real(let value): self = value
        case .integer(let value): self = Double(value)
        default: return nil
        }
    }
}

extension String: SQLValueConvertible {
    public var sqlValue: SQLValue { .text(self) }
    public init?(sqlValue: SQLValue) {
        guard case .text(let value) = sqlValue else { return nil }
        self = value
    }
}

extension [UInt8]: SQLValueConvertible {
    public var sqlValue: SQLValue { .blob(self) }
    public init?(sqlValue: SQLValue) {
        guard case .blob(let value) = sqlValue else { return nil }
        self = value
    }
}

extension Data: SQLValueConvertible {
    public var sqlValue: SQLValue { .blob([UInt8](self)) }
    public init?(sqlValue: SQLValue) {
        guard case .blob(let value) = sqlValue else { return nil }
        self = Data(value)
    }
}

extension Optional: SQLValueConvertible where Wrapped: SQLValueConvertible {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
    /// NULL reads as `nil`; any other value must fit `Wrapped`.
    public init?(sqlValue: SQLValue) {
        if sqlValue == .null {
            self = .none
            return
        }
        guard let value = Wrapped(sqlValue: sqlValue) else { return nil }
        self = .some(value)
    }
}
