/// A generated protobuf enum.
///
/// Proto3 enums are open: a peer built from a newer `.proto` may send a value this build does not know. Generated
/// enums therefore have an `unrecognized(Int32)` case, so such a value is kept and sent on unchanged rather than
/// lost or rejected.
public protocol ProtoEnum: Hashable, Sendable, RawRepresentable where RawValue == Int32 {
    /// Fully-qualified proto name, for example `tokenet.wire.v1.StatusCode`.
    static var protoName: String { get }
    /// Every value declared in the `.proto`, in declaration order.
    static var knownCases: [Self] { get }
    /// The value for `rawValue`, `unrecognized(rawValue)` when it is not declared.
    init(rawValue: Int32)
    /// The declared proto name (for example `INVALID_ARGUMENT`), nil for an unrecognized value.
    var protoValueName: String? { get }
}

extension ProtoEnum {
    /// Proto3 enums default to their zero value.
    public init() {
        self.init(rawValue: 0)
    }
}
