import Foundation
import Testing

@testable import TokenetTransport

/// The listener's bound on TLS handshakes in progress from one address (`HandshakeLimit`).
@Suite(.timeLimit(.minutes(3))) struct HandshakeLimitTests {
    let certs = CertificateFixture.shared

    /// Connections that never start TLS hold their handshakes for the whole timeout (here far longer than the
    /// test): the one past the limit is closed at once and reported with its address, and a peer that completes its
    /// handshake is served once a slot is free.
    @Test func aConnectionPastItsAddressesHandshakesIsClosedAndReported() async throws {
        let loop = try EventLoop(name: "test-handshake-limit")
        defer { loop.shutdown() }
        let (failures, sink) = AsyncStream<TransportError>.makeStream()
        let listener = try await TLSListener.bind(
            context: certs.context(certs.server("tsp")), on: loop,
            options: TLSConnection.Options(handshakeTimeout: .seconds(3600)),
            onHandshakeFailure: { failure, _ in sink.yield(failure) }, handshakesPerAddress: 2)
        var reported = failures.makeAsyncIterator()
        var silent: [PlainConnection] = []
        for _ in 0..<2 {
            silent.append(try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop))
        }
        let third = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        let refusal = try #require(await reported.next())
        #expect(refusal.code == .tooManyHandshakes)
        #expect(
            refusal.message
                == "127.0.0.1 already has 2 TLS handshakes in progress, the most one address may have; its "
                + "connection was closed before the handshake")
        #expect((try? await third.read()) == nil, "the refused connection was not closed")

        // A handshake that ends (its peer gone) frees its slot.
        await silent[0].abort()
        _ = await reported.next()
        let client = try await connect(certs.client("wallet"), port: listener.port, loop: loop)
        var connections = listener.connections.makeAsyncIterator()
        let served = try #require(await connections.next())
        #expect(served.peer == PeerIdentity(role: .wallet, nodeID: "wallet-1"))
        await client.close()
        await served.close()
        for connection in silent.dropFirst() { await connection.abort() }
        await third.abort()
        await listener.close()
    }
}
