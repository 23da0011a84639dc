import Foundation
import Testing
import TokenetWire

@testable import TokenetRPC

/// A client-streaming or bidirectional call through the channel that a goaway shows was never processed goes once
/// more with the requests it had sent, kept up to `RequestReplay.limit` bytes; requests sent after that go to the
/// new call.
extension RPCChannelTests {
    /// Half the requests are sent after a pause in which the refusal arrives: they are kept too, and the sum the
    /// server returns counts every request once.
    @Test(.timeLimit(.minutes(3))) func aClientStreamRefusedUnprocessedGoesAgainWithItsRequests() async throws {
        let connector = DroppingConnector(goaway: true)
        let channel = RPCChannel(backoff: Self.fastBackoff) { try await connector.connect() }
        let sum = try await channel.clientStreaming(Echo.clientStream, options: CallOptions(timeout: .seconds(120))) {
            writer in
            for value in 1...50 { try await writer.send(Scalars(fInt32: Int32(value))) }
            try await Task.sleep(for: .milliseconds(200))
            for value in 51...100 { try await writer.send(Scalars(fInt32: Int32(value))) }
        }
        #expect(sum.fInt32 == 5050)
        #expect(connector.connections.load(ordering: .relaxed) == 2)
    }

    /// Requests past the limit are not kept: the call fails as a refused call did before, and no connection is made
    /// for it.
    @Test(.timeLimit(.minutes(3))) func aClientStreamThatSentMoreThanTheLimitIsNotSentAgain() async throws {
        let connector = DroppingConnector(goaway: true)
        let channel = RPCChannel(backoff: Self.fastBackoff) { try await connector.connect() }
        let piece = Data(count: RequestReplay.limit / 2)
        do {
            _ = try await channel.clientStreaming(Echo.clientStream, options: CallOptions(timeout: .seconds(120))) {
                writer in
                for _ in 0..<3 { try await writer.send(Scalars(fBytes: piece)) }
            }
            Issue.record("the call was sent again")
        } catch let error as RPCError {
            #expect(error.code == .unavailable, "\(error)")
            #expect(error.callWasNotProcessed)
        }
        #expect(connector.connections.load(ordering: .relaxed) == 1)
    }

    /// The caller reads the first response after sending two requests: the call goes again with both, and the third
    /// request, sent after that, follows them on the new call.
    @Test(.timeLimit(.minutes(3))) func aBidirectionalCallRefusedUnprocessedGoesAgainAndLaterRequestsFollow()
        async throws
    {
        let connector = DroppingConnector(goaway: true)
        let channel = RPCChannel(backoff: Self.fastBackoff) { try await connector.connect() }
        let (requests, responses) = try await channel.bidirectional(
            Echo.bidi, options: CallOptions(timeout: .seconds(120)))
        try await requests.send(TestingV1.Choice(pick: .text("a")))
        try await requests.send(TestingV1.Choice(pick: .text("b")))
        var iterator = responses.makeAsyncIterator()
        #expect(try await iterator.next() == TestingV1.Choice(pick: .text("a")))
        try await requests.send(TestingV1.Choice(pick: .text("c")))
        requests.finish()
        var rest: [TestingV1.Choice] = []
        while let response = try await iterator.next() { rest.append(response) }
        #expect(rest == [TestingV1.Choice(pick: .text("b")), TestingV1.Choice(pick: .text("c"))])
        #expect(connector.connections.load(ordering: .relaxed) == 2)
    }

    /// The writer the caller holds was made for the refused call; its `cancel()` must end the call opened in its
    /// place, which would otherwise wait for requests until its deadline.
    @Test(.timeLimit(.minutes(3))) func cancellingTheWriterOfAReopenedCallEndsTheNewCall() async throws {
        let connector = DroppingConnector(goaway: true)
        let channel = RPCChannel(backoff: Self.fastBackoff) { try await connector.connect() }
        let (requests, responses) = try await channel.bidirectional(
            Echo.bidi, options: CallOptions(timeout: .seconds(120)))
        try await requests.send(TestingV1.Choice(pick: .text("a")))
        var iterator = responses.makeAsyncIterator()
        #expect(try await iterator.next() == TestingV1.Choice(pick: .text("a")))
        #expect(connector.connections.load(ordering: .relaxed) == 2)
        requests.cancel()
        do {
            while try await iterator.next() != nil { Issue.record("a response arrived after cancel()") }
            Issue.record("the call ended without an error after cancel()")
        } catch let error as RPCError {
            #expect(error.code == .cancelled, "\(error)")
        }
    }
}
