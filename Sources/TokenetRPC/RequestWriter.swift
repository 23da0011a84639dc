import Foundation
import TokenetWire

/// Sends the requests of a client-streaming or bidirectional call.
///
/// A writer from `RPCClient` sends straight to its call. A writer from `RPCChannel` goes through a `RequestReplay`,
/// which keeps what was sent so that a call a goaway shows the server never processed can go again, requests and
/// all, on the channel's next connection; its later requests then go to the new call.
public struct RequestWriter<Request: ProtoMessage>: Sendable {
    private let target: Target

    private enum Target: Sendable {
        case call(id: UInt32, connection: RPCConnection)
        case replayable(RequestReplay)
    }

    init(id: UInt32, connection: RPCConnection) {
        target = .call(id: id, connection: connection)
    }

    init(_ replay: RequestReplay) {
        target = .replayable(replay)
    }

    /// Suspends while the server has not granted flow-control window for what was sent before, or while the
    /// connection's outbound buffer is full. On a call that has already ended (the server answered it early, with
    /// an error or a response; it was cancelled) it throws FAILED_PRECONDITION, caused by `CallAlreadyEnded`: a
    /// producer that never ends by itself learnt of it only when it finished, and went on encoding requests that
    /// were thrown away. The call's outcome is in its response (a client-streaming call gives it as its result).
    public func send(_ request: Request) async throws {
        let data = try request.serializedData()
        switch target {
        case .call(let id, let connection):
            guard connection.sendRequest(id, data) else {
                throw RPCError(
                    .failedPrecondition, "the call has ended; its response says how", cause: CallAlreadyEnded())
            }
            await connection.waitForSendCapacity(id)
        case .replayable(let replay):
            let call = replay.send(data)
            await call.connection.waitForSendCapacity(call.id)
        }
    }

    /// No more requests.
    public func finish() {
        switch target {
        case .call(let id, let connection): connection.endRequests(id)
        case .replayable(let replay): replay.finish()
        }
    }

    /// Abandons the call.
    public func cancel() {
        switch target {
        case .call(let id, let connection): connection.cancelCallWhenCancelled(id, reason: "cancelled by the caller")
        case .replayable(let replay): replay.cancel()
        }
    }
}
