import Testing
import TokenetTransport

/// `PlainConnection.abort()`: a TCP reset, which fault injection uses to cut connections as a crash would.
@Suite struct PlainConnectionAbortTests {
    @Test func thePeerSeesAResetAndTheAbortingSideFailsItsReads() async throws {
        let loop = try EventLoop(name: "test-abort")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        let client = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        var accepted = listener.connections.makeAsyncIterator()
        let server = try #require(await accepted.next())
        try await client.write([1, 2, 3])
        #expect(try await server.read() == [1, 2, 3])

        await server.abort()
        let peer = await #expect(throws: TransportError.self) { _ = try await client.read() }
        #expect(peer?.description.contains("reset by peer") == true, "\(String(describing: peer))")
        let local = await #expect(throws: TransportError.self) { _ = try await server.read() }
        #expect(local?.description.contains("reset locally") == true, "\(String(describing: local))")
        // Idempotent, and an orderly close afterwards changes nothing.
        await server.abort()
        await server.close()
        await client.close()
        await listener.close()
    }
}
