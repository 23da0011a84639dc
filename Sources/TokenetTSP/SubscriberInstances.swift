import Synchronization

/// Which node instance holds each subscriber's open stream. A node sends its instance id (`NodeInstance`, kept in
/// its data directory) with Subscribe: the same instance again is the node reconnecting, and its new stream
/// replaces the old one (whose connection the TSP may not have seen end yet); another instance while the stream is
/// open is a second node started on the same certificate, refused, since each would take and acknowledge the
/// other's messages. A Subscribe without an instance (a tool) replaces the stream, as before instances existed.
///
/// Pure: the service asks it before opening a stream and tells it when a stream closes.
struct SubscriberInstances {
    struct Holder: Equatable {
        var streamID: UInt64
        var instanceID: String
        var sinceMs: UInt64
    }

    /// What to do with a Subscribe.
    enum Decision: Equatable {
        /// Open the stream; `replacing` says whether it replaces an open one, and `sameInstance` whether that one
        /// was the same node's (a reconnect, nothing to warn about).
        case open(replacing: Bool, sameInstance: Bool)
        /// Refuse it: another instance holds the stream.
        case refuse(held: Holder)
    }

    private(set) var holders: [String: Holder] = [:]

    func decide(subscriber: String, instanceID: String) -> Decision {
        guard let held = holders[subscriber] else { return .open(replacing: false, sameInstance: false) }
        if !instanceID.isEmpty, !held.instanceID.isEmpty, held.instanceID != instanceID {
            return .refuse(held: held)
        }
        return .open(replacing: true, sameInstance: !instanceID.isEmpty && held.instanceID == instanceID)
    }

    mutating func opened(subscriber: String, streamID: UInt64, instanceID: String, atMs now: UInt64) {
        holders[subscriber] = Holder(streamID: streamID, instanceID: instanceID, sinceMs: now)
    }

    /// Stream `streamID` ended; a newer stream of the subscriber stays its holder.
    mutating func closed(subscriber: String, streamID: UInt64) {
        if holders[subscriber]?.streamID == streamID { holders[subscriber] = nil }
    }

    /// One table for every call of a service (a struct, copied into each handler).
    final class Shared: Sendable {
        let state = Mutex(SubscriberInstances())
    }
}
