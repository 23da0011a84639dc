/// A fault the proxy applies to the connections it carries, from the next byte on.
///
/// TCP never loses bytes without breaking the connection, so none of these drops data: a delay holds each chunk
/// back, a partition holds everything until it is lifted (as a healed network delivers what TCP retransmitted), and a
/// reset ends the connections outright.
public enum Fault: Sendable, Equatable, CustomStringConvertible {
    /// Bytes go on as they arrive.
    case none
    /// Each chunk goes on this long after it arrived, in order, in both directions.
    case delay(Duration)
    /// Nothing goes on in either direction; what arrives meanwhile is held (up to `FaultProxyStateMachine`'s
    /// limit per direction, then the sender is no longer read, as a full TCP window would stop it) and goes on, in
    /// order, when the partition is lifted. New connections are accepted but carry nothing either.
    case partition
    /// New connections are closed as soon as they are accepted, as if nothing listened; established ones carry on.
    case refuse

    public var description: String {
        switch self {
        case .none: return "none"
        case .delay(let duration): return "delay \(FaultCommand.format(duration))"
        case .partition: return "partition"
        case .refuse: return "refuse"
        }
    }
}
