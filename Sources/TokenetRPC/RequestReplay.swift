import Foundation
import Synchronization

/// The requests of a client-streaming or bidirectional call made through `RPCChannel`, kept until the call is
/// known to have reached the server, so that it can go again when a goaway shows the server never processed it.
///
/// A unary or server-streaming call goes again with the request the channel was given. These calls' requests come
/// from the caller one by one, so the channel keeps a copy of each (the serialized bytes it sent, no new encoding)
/// up to `limit` bytes, as gRPC's transparent retry buffers a call's messages. A call that sent more is not sent
/// again: it fails UNAVAILABLE as before, and its copies are let go at once. The copies are also let go when the
/// first response arrives (the server processed the call) and once the call has gone again (it goes at most once).
///
/// Every request goes to the current call under the same lock that opening the call again takes: a request sent
/// while the call is opened again is either among those sent again or follows them, never lost or sent twice.
final class RequestReplay: Sendable {
    /// Bytes of serialized requests kept per call.
    static let limit = 256 * 1024

    private let state: Mutex<State>

    private struct State {
        var id: UInt32
        var connection: RPCConnection
        var kept: [Data] = []
        var keptBytes = 0
        /// False once the requests outgrew `limit`, a response arrived, or the call went again.
        var keeping = true
        var finished = false
        var cancelled = false
    }

    init(id: UInt32, connection: RPCConnection, limit: Int = RequestReplay.limit) {
        state = Mutex(State(id: id, connection: connection))
        self.limit = limit
    }

    private let limit: Int

    /// Sends `data` on the current call, keeping a copy while the call may still go again; returns that call.
    func send(_ data: Data) -> (id: UInt32, connection: RPCConnection) {
        state.withLock { state in
            if state.keeping {
                state.keptBytes += data.count
                if state.keptBytes <= limit {
                    state.kept.append(data)
                } else {
                    state.keeping = false
                    state.kept = []
                }
            }
            state.connection.sendRequest(state.id, data)
            return (state.id, state.connection)
        }
    }

    /// Ends the requests, and remembers it for a call opened again.
    func finish() {
        state.withLock { state in
            state.finished = true
            state.connection.endRequests(state.id)
        }
    }

    /// Abandons the current call, and any call not yet opened again. Never waits for the lock, as a task's
    /// cancellation handler must not (see `RPCConnection.cancelCallWhenCancelled`): when a sender holds it, the
    /// cancel is made from a new task an instant later.
    func cancel() {
        let call: (id: UInt32, connection: RPCConnection)? = state.withLockIfAvailable { state in
            state.cancelled = true
            state.keeping = false
            state.kept = []
            return (state.id, state.connection)
        }
        guard let call else {
            Task { self.cancel() }
            return
        }
        call.connection.cancelCallWhenCancelled(call.id, reason: "cancelled by the caller")
    }

    /// Whether the call could still go again: its requests are all kept and it was not cancelled. Checked before a
    /// connection is made for it.
    var canGoAgain: Bool {
        state.withLock { $0.keeping && !$0.cancelled }
    }

    /// A response arrived: the server processed the call, which will not go again.
    func stopKeeping() {
        state.withLock { state in
            state.keeping = false
            state.kept = []
        }
    }

    /// Opens the call again on `client`, sends every request sent so far and, when they had ended, ends them;
    /// later requests go to the new call. Throws `refusal` when the requests were not all kept, a response had
    /// arrived, the call was cancelled, or it went again already.
    func reopen(
        _ path: String, _ options: CallOptions, on client: RPCClient, after refusal: RPCError
    ) throws -> RPCClient.OpenCall {
        try state.withLock { state in
            guard state.keeping, !state.cancelled else { throw refusal }
            let call = try client.open(path, options)
            for data in state.kept { client.connection.sendRequest(call.id, data) }
            if state.finished { client.connection.endRequests(call.id) }
            state.id = call.id
            state.connection = client.connection
            state.keeping = false
            state.kept = []
            return call
        }
    }
}
