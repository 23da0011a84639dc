import Testing
import TokenetWire

@testable import TokenetRPC

/// A server-streaming call through the channel that a goaway shows was never processed goes once more, as a unary
/// call does; one that may have been processed does not, and `cancel()` reaches the call opened in its place.
extension RPCChannelTests {
    /// The deadline only keeps a hang from lasting.
    @Test(.timeLimit(.minutes(3))) func aStreamTheServerRefusedUnprocessedIsOpenedOnceMore() async throws {
        let connector = DroppingConnector(goaway: true)
        let channel = RPCChannel(backoff: Self.fastBackoff) { try await connector.connect() }
        let stream = try await channel.serverStreaming(
            Echo.serverStream, Scalars(fUint32: 3), options: CallOptions(timeout: .seconds(120)))
        var received: [Int32] = []
        for try await response in stream { received.append(response.fInt32) }
        #expect(received == [0, 1, 2])
        #expect(connector.connections.load(ordering: .relaxed) == 2)
    }

    @Test(.timeLimit(.minutes(3))) func aStreamLostWithItsConnectionIsNotOpenedAgain() async throws {
        let connector = DroppingConnector(goaway: false)
        let channel = RPCChannel(backoff: Self.fastBackoff) { try await connector.connect() }
        let stream = try await channel.serverStreaming(
            Echo.serverStream, Scalars(fUint32: 3), options: CallOptions(timeout: .seconds(120)))
        do {
            for try await _ in stream { Issue.record("a response arrived from a server that closed") }
            Issue.record("the stream ended without an error")
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            #expect(!error.callWasNotProcessed)
        }
        #expect(connector.connections.load(ordering: .relaxed) == 1)
    }

    /// The stream value the caller holds still names the refused call; its `cancel()` must end the one that
    /// replaced it, or that call would run on, unseen, until the server finished it. The server sends one response
    /// and then waits 20 s before it ends the stream: long past a cancel, which ends the call at once, and short
    /// enough for a cancel that went astray to show as a stream that ran to its end. (A stream that ends by itself
    /// sooner may end before the cancel: its responses all fit the call's window, and a loaded run read them late.)
    @Test(.timeLimit(.minutes(3))) func cancellingAReopenedStreamEndsTheCallOpenedInItsPlace() async throws {
        var router = RPCRouter()
        router.serverStreaming(Echo.serverStream) { _, writer, _ in
            try await writer.send(Scalars(fInt32: 0))
            try await Task.sleep(for: .seconds(20))
        }
        let connector = DroppingConnector(goaway: true, router: router)
        let channel = RPCChannel(backoff: Self.fastBackoff) { try await connector.connect() }
        let stream = try await channel.serverStreaming(
            Echo.serverStream, Scalars(), options: CallOptions(timeout: .seconds(120)))
        var responses = stream.makeAsyncIterator()
        #expect(try await responses.next()?.fInt32 == 0)
        #expect(connector.connections.load(ordering: .relaxed) == 2)
        stream.cancel()
        do {
            while try await responses.next() != nil { Issue.record("a response arrived after cancel()") }
            Issue.record("the stream ran to its end after cancel()")
        } catch let error as RPCError {
            #expect(error.code == .cancelled, "\(error)")
        }
    }
}
