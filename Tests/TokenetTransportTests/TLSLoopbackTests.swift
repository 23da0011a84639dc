import Foundation
import Synchronization
import Testing

@testable import TokenetTransport

@Suite(.timeLimit(.minutes(5))) struct TLSLoopbackTests {
    let certs = CertificateFixture.shared

    @Test func mutualTLSEchoOverLoopbackWithIdentitiesOnBothSides() async throws {
        let loop = try EventLoop(name: "test-echo")
        defer { loop.shutdown() }
        let server = try await EchoServer(loop: loop, configuration: certs.server("tsp"))
        let client = try await connect(certs.client("issuer"), port: server.port, loop: loop)
        #expect(client.peer == PeerIdentity(role: .tsp, nodeID: "tsp-1"))

        // 320 messages of 1 byte to ~7 KiB: a little over 1 MiB in total.
        let messages = (0..<320).map { pattern(1 + ($0 * 3571) % 7000, seed: $0) }
        let total = messages.reduce(0) { $0 + $1.count }
        #expect(total >= 1 << 20)
        let echoed = try await echoRoundTrip(client, messages: messages)
        #expect(echoed == Array(messages.joined()))

        // One large write, far above the outbound high-water mark, arrives intact too.
        let large = pattern(1 << 20, seed: 99)
        #expect(try await echoRoundTrip(client, messages: [large]) == large)

        await client.close()
        await server.stop()
        #expect(server.peers.withLock { $0 } == [PeerIdentity(role: .issuer, nodeID: "issuer-1")])
    }

    @Test func oneLoopServesManyConcurrentClients() async throws {
        let serverLoop = try EventLoop(name: "test-many-server")
        let clientLoop = try EventLoop(name: "test-many-clients")
        defer {
            serverLoop.shutdown()
            clientLoop.shutdown()
        }
        let server = try await EchoServer(loop: serverLoop, configuration: certs.server())
        let roles = ["wallet", "issuer", "operator", "tsp"]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    let client = try await connect(certs.client(roles[index % 4]), port: server.port, loop: clientLoop)
                    let messages = (0..<8).map { pattern(8 * 1024 + $0, seed: index * 8 + $0) }
                    let echoed = try await echoRoundTrip(client, messages: messages)
                    #expect(echoed == Array(messages.joined()))
                    await client.close()
                }
            }
            try await group.waitForAll()
        }
        await server.stop()
        #expect(server.peers.withLock { $0.count } == 40)
    }

    @Test func peerCloseEndsTheReadSequence() async throws {
        let loop = try EventLoop(name: "test-close")
        defer { loop.shutdown() }
        let listener = try await TLSListener.bind(context: certs.context(certs.server()), on: loop)
        async let accepted = listener.connections.first { _ in true }
        let client = try await connect(certs.client("wallet"), port: listener.port, loop: loop)
        let serverSide = try #require(await accepted)
        try await client.write(Array("last words".utf8))
        await client.close()
        var received: [UInt8] = []
        for try await chunk in serverSide.chunks { received += chunk }
        #expect(received == Array("last words".utf8))
        await #expect(throws: TransportError.self) { try await client.write([1]) }
        await listener.close()
    }

    @Test func cancelledReadThrowsAndLosesNoData() async throws {
        let loop = try EventLoop(name: "test-cancel")
        defer { loop.shutdown() }
        let listener = try await TLSListener.bind(context: certs.context(certs.server()), on: loop)
        async let accepted = listener.connections.first { _ in true }
        let client = try await connect(certs.client("wallet"), port: listener.port, loop: loop)
        let serverSide = try #require(await accepted)

        let pending = Task { try await client.read() }
        pending.cancel()
        let error = await #expect(throws: TransportError.self) { try await pending.value }
        #expect(error?.code == .cancelled)

        try await serverSide.write(Array("after cancel".utf8))
        #expect(try await client.read() == Array("after cancel".utf8))
        await client.close()
        await serverSide.close()
        await listener.close()
    }

    @Test func clientWithoutCertificateIsRefused() async throws {
        let loop = try EventLoop(name: "test-no-cert")
        defer { loop.shutdown() }
        let server = try await EchoServer(loop: loop, configuration: certs.server())
        let clientError = await expectRefused(certs.client(nil), port: server.port, loop: loop)
        #expect(clientError?.code == .certificateRefused, "\(String(describing: clientError))")
        #expect(clientError?.message.contains("certificate required") == true, "\(String(describing: clientError))")
        let serverError = await server.nextFailure()
        #expect(serverError?.code == .handshakeFailed)
        // The refusal names the client's address and port: it has no identity to be named by.
        let peer = try #require(server.failurePeers.withLock { $0.first } ?? nil)
        #expect(peer.hasPrefix("127.0.0.1:") && UInt16(peer.dropFirst("127.0.0.1:".count)) != nil, "\(peer)")
        await server.stop()
        #expect(server.peers.withLock { $0 }.isEmpty)
    }

    @Test func clientCertificateFromAnotherCAIsRefused() async throws {
        let loop = try EventLoop(name: "test-other-ca")
        defer { loop.shutdown() }
        let server = try await EchoServer(loop: loop, configuration: certs.server())
        let clientError = await expectRefused(certs.client("wallet", untrusted: true), port: server.port, loop: loop)
        // The client learns why: its certificate, and the server's reason.
        #expect(clientError?.code == .certificateRefused, "\(String(describing: clientError))")
        #expect(clientError?.message == "the server refused this client's certificate (unknown CA)")
        let serverError = await server.nextFailure()
        #expect(serverError?.code == .handshakeFailed)
        #expect(serverError?.message.contains("unable to get local issuer certificate") == true)
        await server.stop()
        #expect(server.peers.withLock { $0 }.isEmpty)
    }

    @Test func certificateWithoutTokenetURIIsRefused() async throws {
        let loop = try EventLoop(name: "test-no-uri")
        defer { loop.shutdown() }
        let server = try await EchoServer(loop: loop, configuration: certs.server())
        let clientError = await expectRefused(certs.client("plain"), port: server.port, loop: loop)
        #expect(clientError?.code == .certificateRefused, "\(String(describing: clientError))")
        #expect(clientError?.message.contains("(handshake failure)") == true)
        let serverError = await server.nextFailure()
        #expect(serverError?.code == .peerIdentity)
        await server.stop()
        #expect(server.peers.withLock { $0 }.isEmpty)
    }

    @Test func clientRefusesServerFromAnotherCA() async throws {
        let loop = try EventLoop(name: "test-server-other-ca")
        defer { loop.shutdown() }
        let untrustedServer = TLSConfiguration.server(
            certificateChainFile: certs.path("tsp.pem", untrusted: true),
            privateKeyFile: certs.path("tsp.key", untrusted: true), trustedCAFile: certs.caFile)
        let server = try await EchoServer(loop: loop, configuration: untrustedServer)
        let error = await #expect(throws: TransportError.self) {
            try await connect(certs.client("wallet"), port: server.port, loop: loop)
        }
        #expect(error?.code == .handshakeFailed)
        #expect(error?.isLasting == true, "a refused certificate is not worth a retry")
        await server.stop()
    }

    @Test func serverKeepsServingAfterBadHandshakes() async throws {
        let loop = try EventLoop(name: "test-keep-serving")
        defer { loop.shutdown() }
        let options = TLSConnection.Options(handshakeTimeout: .seconds(2))
        let server = try await EchoServer(loop: loop, configuration: certs.server(), options: options)
        let first = try await connect(certs.client("wallet"), port: server.port, loop: loop)
        #expect(try await echoRoundTrip(first, messages: [pattern(1000, seed: 1)]) == pattern(1000, seed: 1))

        // Plain text instead of a ClientHello, and a plaintext Tokenet peer's first frame: the failure says the
        // peer does not speak TLS, which the bare OpenSSL reason does not.
        let trimsAsked = Heap.trimsAsked.load(ordering: .relaxed)
        let garbage = try RawTCPClient(port: server.port)
        garbage.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let plaintextPeer = try RawTCPClient(port: server.port)
        plaintextPeer.send([0x00, 0x00, 0x00, 0x06, 0x12, 0x04, 0x08, 0x01, 0x1A, 0x00])
        for _ in 0..<2 {
            let failure = await server.nextFailure()
            #expect(failure?.code == .handshakeFailed)
            #expect(failure?.message.contains("the peer does not speak TLS") == true, "\(String(describing: failure))")
        }
        // What the failed handshakes held is given back to the system (see `Heap.trimSoon`).
        #expect(Heap.trimsAsked.load(ordering: .relaxed) > trimsAsked)
        // A client that never speaks runs into the handshake deadline.
        let silent = try RawTCPClient(port: server.port)
        #expect(await server.nextFailure()?.code == .timeout)
        _ = silent
        // A refused certificate.
        _ = await expectRefused(certs.client(nil), port: server.port, loop: loop)
        #expect(await server.nextFailure()?.code == .handshakeFailed)

        // The established connection and new clients are unaffected.
        #expect(try await echoRoundTrip(first, messages: [pattern(5000, seed: 2)]) == pattern(5000, seed: 2))
        let second = try await connect(certs.client("operator"), port: server.port, loop: loop)
        #expect(try await echoRoundTrip(second, messages: [pattern(3000, seed: 3)]) == pattern(3000, seed: 3))
        await first.close()
        await second.close()
        await server.stop()
        #expect(server.peers.withLock { $0.map(\.role) } == [.wallet, .operator])
    }

    @Test func writerToAPeerThatDoesNotReadSuspends() async throws {
        let loop = try EventLoop(name: "test-backpressure")
        defer { loop.shutdown() }
        let listener = try await TLSListener.bind(context: certs.context(certs.server()), on: loop)
        async let accepted = listener.connections.first { _ in true }
        let highWater = 64 * 1024
        let client = try await connect(
            certs.client("wallet"), port: listener.port, loop: loop,
            options: TLSConnection.Options(outboundHighWater: highWater))
        let serverSide = try #require(await accepted)  // held open, not read until later

        // The buffer may pass the mark by at most one TLS record (plus record overhead).
        try await expectWriterParksUntilThePeerReads(
            label: "backpressure", highWater: highWater, slack: 17 * 1024,
            write: { try await client.write($0) }, close: { await client.close() },
            bufferState: { await client.bufferState() },
            readAll: { try await serverSide.chunks.reduce(0) { $0 + $1.count } })
        await listener.close()
    }
}
