import Foundation
import TokenetWire

/// Calls by path on serialized messages, for tools that learn the message types at run time (the `tokenet call`
/// command resolves them through reflection) and for calling methods this build has no descriptor for.
///
/// They follow the typed calls exactly: the same trace id and deadline inheritance, the same deadline timer, the same
/// flow-control accounting. Only the decoding of messages is left to the caller.
extension RPCClient {
    /// One request, one response.
    public func unary(path: String, request: Data, options: CallOptions = CallOptions()) async throws -> Data {
        try await clientStreaming(path: path, requests: [request], options: options)
    }

    /// One request, any number of responses.
    public func serverStreaming(path: String, request: Data, options: CallOptions = CallOptions()) throws
        -> RawResponseStream
    {
        try bidirectional(path: path, requests: [request], options: options)
    }

    /// Every message of `requests` (possibly none), then one response.
    public func clientStreaming(path: String, requests: [Data], options: CallOptions = CallOptions()) async throws
        -> Data
    {
        let call = try openUntyped(path, options)
        defer { call.timer?.cancel() }
        let connection = connection
        return try await withTaskCancellationHandler {
            for request in requests { connection.sendRequest(call.id, request) }
            connection.endRequests(call.id)
            var iterator = call.responses.makeAsyncIterator()
            guard let data = try await iterator.next() else {
                throw RPCError(.internal, "the server ended the call without a response")
            }
            connection.consumed(call.id, byteCount: data.count)
            guard try await iterator.next() == nil else {
                throw RPCError(.internal, "the server sent more than one response to a single-response call")
            }
            return data
        } onCancel: {
            connection.cancelCall(call.id, reason: "cancelled by the caller")
        }
    }

    /// Sends every message of `requests`, ends the requests, and streams the responses.
    public func bidirectional(path: String, requests: [Data], options: CallOptions = CallOptions()) throws
        -> RawResponseStream
    {
        let call = try openUntyped(path, options)
        for request in requests { connection.sendRequest(call.id, request) }
        connection.endRequests(call.id)
        return RawResponseStream(call: call, connection: connection)
    }

    /// Opens a call whose requests the caller sends with the writer while reading the responses.
    public func bidirectional(path: String, options: CallOptions = CallOptions()) throws
        -> (requests: RawRequestWriter, responses: RawResponseStream)
    {
        let call = try openUntyped(path, options)
        return (
            RawRequestWriter(id: call.id, connection: connection), RawResponseStream(call: call, connection: connection)
        )
    }

    /// The typed calls' call opening (trace id, inherited deadline, deadline timer), kept here rather than shared
    /// so that the typed client's hot path stays as it is.
    private func openUntyped(_ path: String, _ options: CallOptions) throws -> OpenCall {
        var metadata = options.metadata
        let inherited = ServerContext.current
        if metadata.traceID == nil {
            metadata.set(Metadata.traceIDKey, .text(inherited?.traceID ?? Metadata.newTraceID()))
        }
        var timeout = options.timeout
        if let deadline = inherited?.deadline {
            let remaining = deadline - ContinuousClock.now
            timeout = min(timeout ?? remaining, remaining)
        }
        if let timeout, timeout <= .zero {
            throw RPCError(.deadlineExceeded, "the deadline passed before \(path) started")
        }
        let (id, responses) = try connection.openCall(method: path, metadata: metadata, timeout: timeout)
        let timer = timeout.map { timeout in
            Task { [connection] in
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                let milliseconds =
                    timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
                connection.cancelCall(
                    id, code: .deadlineExceeded,
                    reason: "the call did not finish within its deadline (\(milliseconds) ms)")
            }
        }
        return OpenCall(id: id, responses: responses, timer: timer)
    }
}

/// Sends the serialized requests of a call opened with `bidirectional(path:options:)`.
public struct RawRequestWriter: Sendable {
    let id: UInt32
    let connection: RPCConnection

    public func send(_ request: Data) {
        connection.sendRequest(id, request)
    }

    /// No more requests.
    public func finish() {
        connection.endRequests(id)
    }

    /// Abandons the call.
    public func cancel() {
        connection.cancelCall(id, reason: "cancelled by the caller")
    }
}

/// The serialized responses of a call; ends when the server's status is OK and throws `RPCError` otherwise.
public struct RawResponseStream: AsyncSequence, Sendable {
    public typealias Element = Data
    let call: RPCClient.OpenCall
    let connection: RPCConnection

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Data, any Error>.AsyncIterator
        let call: RPCClient.OpenCall
        let connection: RPCConnection

        public mutating func next() async throws -> Data? {
            let id = call.id
            let connection = connection
            var base = base
            defer { self.base = base }
            let data: Data?
            do {
                data = try await withTaskCancellationHandler {
                    try await base.next()
                } onCancel: {
                    connection.cancelCall(id, reason: "cancelled by the caller")
                }
            } catch {
                call.timer?.cancel()
                throw error
            }
            guard let data else {
                call.timer?.cancel()
                return nil
            }
            connection.consumed(id, byteCount: data.count)
            return data
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: call.responses.makeAsyncIterator(), call: call, connection: connection)
    }

    /// Abandons the call.
    public func cancel() {
        connection.cancelCall(call.id, reason: "cancelled by the caller")
    }
}
