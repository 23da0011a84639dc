import Testing
import TokenetRPC
import TokenetTransport
import TokenetWire

/// The in-memory stream fails writes after a close as a TLS connection does, so the RPC layer takes a close the same
/// way over both: a write that meets the peer's close is left for the reader to explain.
@Suite struct InMemoryByteStreamTests {
    @Test func aWriteAfterThePeerClosedFailsAsClosedByPeer() async throws {
        let (client, server) = InMemoryByteStream.pair()
        try await client.write([1])
        #expect(try await server.read() == [1])
        await server.close()
        await #expect(throws: TransportError.closedByPeer) { try await client.write([2]) }
        #expect(try await client.read() == nil)
    }

    @Test func aWriteAfterThisEndClosedFailsAsClosedLocally() async throws {
        let (client, server) = InMemoryByteStream.pair()
        await client.close()
        await #expect(throws: TransportError.closedLocally) { try await client.write([1]) }
        // The first close is the one the other end is told of.
        await server.close()
        await #expect(throws: TransportError.closedByPeer) { try await server.write([1]) }
    }

    /// The call that met the peer's close with its first write ends with what the read saw (the peer closed before
    /// its hello), whichever of the two came first: with the write's own error it read "write failed: …" under
    /// load.
    @Test func aCallWhoseFirstWriteMeetsThePeersCloseIsToldWhatTheReadSaw() async throws {
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        await serverEnd.close()
        let client = RPCClient(stream: clientEnd)
        let error = await #expect(throws: RPCError.self) {
            _ = try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars())
        }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message.contains("the peer closed the connection before its hello") == true,
            "\(String(describing: error))")
        await client.close()
    }
}
