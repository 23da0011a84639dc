import Foundation
import Synchronization
import TokenetWire

/// The responses of a streaming call; ends when the server's status is OK and throws `RPCError` otherwise.
///
/// A stream opened through `RPCChannel` may carry a `Reopening`: when a goaway shows that the server never processed
/// the call (it crossed the server's drain or idle close on the wire), the first `next()` opens it once more on the
/// channel's next connection instead of throwing an UNAVAILABLE the caller could do nothing about. Such a call has
/// delivered no response, so nothing is repeated or lost. A bidirectional call's requests go with it
/// (`RequestReplay`).
public struct ResponseStream<Response: ProtoMessage>: AsyncSequence, Sendable {
    public typealias Element = Response
    let raw: RawResponseStream
    let reopening: Reopening?
    /// A bidirectional call's kept requests, let go at the first response (see `RequestReplay`).
    let replay: RequestReplay?

    init(call: RPCClient.OpenCall, connection: RPCConnection) {
        raw = RawResponseStream(call: call, connection: connection)
        reopening = nil
        replay = nil
    }

    init(_ stream: ResponseStream, reopening: Reopening, replay: RequestReplay? = nil) {
        raw = stream.raw
        self.reopening = reopening
        self.replay = replay
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var raw: RawResponseStream.AsyncIterator
        var reopening: Reopening?
        var replay: RequestReplay?

        public mutating func next() async throws -> Response? {
            let data: Data?
            do {
                data = try await raw.next()
            } catch let error as RPCError where error.callWasNotProcessed {
                guard let reopening = reopening.take() else { throw error }
                raw = try await reopening.open(after: error).makeAsyncIterator()
                data = try await raw.next()
            }
            guard let data else { return nil }
            // Processed: the call will not go again, and its requests need not be kept.
            replay.take()?.stopKeeping()
            return try decodeResponse(Response.self, data)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(raw: raw.makeAsyncIterator(), reopening: reopening, replay: replay)
    }

    /// Abandons the call, and the call opened again in its place if there is one.
    public func cancel() {
        raw.cancel()
        reopening?.cancel()
    }

    /// Opens a refused call again, at most once, and keeps what it opened so that `cancel()` reaches it.
    final class Reopening: Sendable {
        private let reopen: @Sendable (RPCError) async throws -> RawResponseStream
        private let state = Mutex(State())

        private struct State {
            var cancelled = false
            /// Once per stream, even when a caller iterates it twice.
            var used = false
            var reopened: RawResponseStream?
        }

        /// `reopen` gets the refusal, to throw when the call has no time left to go again.
        init(_ reopen: @escaping @Sendable (RPCError) async throws -> RawResponseStream) {
            self.reopen = reopen
        }

        func open(after refusal: RPCError) async throws -> RawResponseStream {
            let refused = state.withLock { state in
                defer { state.used = true }
                return state.cancelled || state.used
            }
            if refused { throw refusal }
            let stream = try await reopen(refusal)
            let cancelled = state.withLock { state in
                state.reopened = stream
                return state.cancelled
            }
            if cancelled { stream.cancel() }
            return stream
        }

        func cancel() {
            let reopened = state.withLock { state in
                state.cancelled = true
                return state.reopened
            }
            reopened?.cancel()
        }
    }
}
