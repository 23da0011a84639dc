import Foundation
import TokenetWire

/// Calls by path on serialized messages, for tools that learn the message types at run time (the `tokenet call`
/// command resolves them through reflection) and for calling methods this build has no descriptor for.
///
/// They follow the typed calls exactly: the same trace id and deadline inheritance, the same deadline, the same
/// flow-control accounting. Only the decoding of messages is left to the caller.
extension RPCClient {
    /// One request, one response.
    public func unary(path: String, request: Data, options: CallOptions = CallOptions()) async throws -> Data {
        try await clientStreaming(path: path, requests: [request], options: options)
    }

    /// One request, any number of responses.
    public func serverStreaming(path: String, request: Data, options: CallOptions = CallOptions()) async throws
        -> RawResponseStream
    {
        try await bidirectional(path: path, requests: [request], options: options)
    }

    /// Every message of `requests` (possibly none), then one response.
    public func clientStreaming(path: String, requests: [Data], options: CallOptions = CallOptions()) async throws
        -> Data
    {
        let call = try open(path, options)
        let connection = connection
        return try await withTaskCancellationHandler {
            for request in requests {
                // Room first: a peer that stopped reading holds this call, until its deadline, rather than the bytes
                // of every request sent to it meanwhile.
                await connection.waitForSendCapacity(call.id)
                connection.sendRequest(call.id, request)
            }
            connection.endRequests(call.id)
            // Ended by this function's cancellation handler, which cancels the call: the queue's own handler would
            // end it cleanly first when the connection was busy, and a cancelled caller read INTERNAL "no response".
            guard let data = try await call.responses.nextEndedOnCancel() else {
                throw RPCError(.internal, "the server ended the call without a response")
            }
            connection.consumed(call.id, byteCount: data.count, moreExpected: false)
            guard try await call.responses.nextEndedOnCancel() == nil else {
                throw RPCError(.internal, "the server sent more than one response to a single-response call")
            }
            return data
        } onCancel: {
            connection.cancelCallWhenCancelled(call.id, reason: "cancelled by the caller")
        }
    }

    /// Sends every message of `requests`, ends the requests, and streams the responses. Each request waits for
    /// room first, as in `clientStreaming(path:requests:options:)`.
    public func bidirectional(path: String, requests: [Data], options: CallOptions = CallOptions()) async throws
        -> RawResponseStream
    {
        let call = try open(path, options)
        let connection = connection
        await withTaskCancellationHandler {
            for request in requests {
                await connection.waitForSendCapacity(call.id)
                if Task.isCancelled { break }
                connection.sendRequest(call.id, request)
            }
        } onCancel: {
            connection.cancelCallWhenCancelled(call.id, reason: "cancelled by the caller")
        }
        if Task.isCancelled {
            throw RPCError(.cancelled, "the calling task was cancelled while the requests of \(path) were being sent")
        }
        connection.endRequests(call.id)
        return RawResponseStream(call: call, connection: connection)
    }

    /// Opens a call whose requests the caller sends with the writer while reading the responses.
    public func bidirectional(path: String, options: CallOptions = CallOptions()) throws
        -> (requests: RawRequestWriter, responses: RawResponseStream)
    {
        let call = try open(path, options)
        return (
            RawRequestWriter(id: call.id, connection: connection), RawResponseStream(call: call, connection: connection)
        )
    }
}

/// Sends the serialized requests of a call opened with `bidirectional(path:options:)`.
public struct RawRequestWriter: Sendable {
    let id: UInt32
    let connection: RPCConnection

    /// Suspends while the server has not granted flow-control window for what was sent before.
    public func send(_ request: Data) async {
        connection.sendRequest(id, request)
        await connection.waitForSendCapacity(id)
    }

    /// No more requests.
    public func finish() {
        connection.endRequests(id)
    }

    /// Abandons the call.
    public func cancel() {
        connection.cancelCallWhenCancelled(id, reason: "cancelled by the caller")
    }
}

/// The serialized responses of a call; ends when the server's status is OK and throws `RPCError` otherwise.
public struct RawResponseStream: AsyncSequence, Sendable {
    public typealias Element = Data
    let call: RPCClient.OpenCall
    let connection: RPCConnection

    public struct AsyncIterator: AsyncIteratorProtocol {
        let call: RPCClient.OpenCall
        let connection: RPCConnection

        public mutating func next() async throws -> Data? {
            let (id, connection, responses) = (call.id, connection, call.responses)
            // The handler cancels the call, which ends the responses with CANCELLED: a consumer that was cancelled
            // does not see the stream end as if the server had finished it.
            let data = try await withTaskCancellationHandler {
                try await responses.nextEndedOnCancel()
            } onCancel: {
                connection.cancelCallWhenCancelled(id, reason: "cancelled by the caller")
            }
            guard let data else { return nil }
            connection.consumed(id, byteCount: data.count)
            return data
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(call: call, connection: connection)
    }

    /// Abandons the call.
    public func cancel() {
        connection.cancelCallWhenCancelled(call.id, reason: "cancelled by the caller")
    }
}
