import Foundation
import Synchronization
import Testing

@testable import TokenetTransport

/// Plaintext connections on loopback: the same event-loop driver as TLS, with a pass-through engine.
@Suite(.timeLimit(.minutes(5))) struct PlainLoopbackTests {
    @Test func echoOverLoopback() async throws {
        let loop = try EventLoop(name: "test-plain-echo")
        defer { loop.shutdown() }
        let server = try await PlainEchoServer(loop: loop)
        let client = try await PlainConnection.connect(host: "127.0.0.1", port: server.port, on: loop)

        // 320 messages of 1 byte to ~7 KiB: a little over 1 MiB in total.
        let messages = (0..<320).map { pattern(1 + ($0 * 3571) % 7000, seed: $0) }
        #expect(messages.reduce(0) { $0 + $1.count } >= 1 << 20)
        #expect(try await plainEchoRoundTrip(client, messages: messages) == Array(messages.joined()))

        // One large write, far above the outbound high-water mark, arrives intact too.
        let large = pattern(1 << 20, seed: 99)
        #expect(try await plainEchoRoundTrip(client, messages: [large]) == large)

        await client.close()
        await server.stop()
        #expect(server.accepted.withLock { $0 } == 1)
    }

    @Test func oneLoopServesManyConcurrentClients() async throws {
        let serverLoop = try EventLoop(name: "test-plain-many-server")
        let clientLoop = try EventLoop(name: "test-plain-many-clients")
        defer {
            serverLoop.shutdown()
            clientLoop.shutdown()
        }
        let server = try await PlainEchoServer(loop: serverLoop)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    let client = try await PlainConnection.connect(host: "localhost", port: server.port, on: clientLoop)
                    let messages = (0..<8).map { pattern(8 * 1024 + $0, seed: index * 8 + $0) }
                    #expect(try await plainEchoRoundTrip(client, messages: messages) == Array(messages.joined()))
                    await client.close()
                }
            }
            try await group.waitForAll()
        }
        await server.stop()
        #expect(server.accepted.withLock { $0 } == 40)
    }

    @Test func peerCloseEndsTheReadSequence() async throws {
        let loop = try EventLoop(name: "test-plain-close")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        async let accepted = listener.connections.first { _ in true }
        let client = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        let serverSide = try #require(await accepted)
        try await client.write(Array("last words".utf8))
        await client.close()
        var received: [UInt8] = []
        for try await chunk in serverSide.chunks { received += chunk }
        #expect(received == Array("last words".utf8))
        await #expect(throws: TransportError.self) { try await client.write([1]) }
        // The server side answered the end of the stream by closing too.
        await #expect(throws: TransportError.self) { try await serverSide.write([1]) }
        await listener.close()
    }

    @Test func cancelledReadThrowsAndLosesNoData() async throws {
        let loop = try EventLoop(name: "test-plain-cancel")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        async let accepted = listener.connections.first { _ in true }
        let client = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
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

    @Test func writerToAPeerThatDoesNotReadSuspends() async throws {
        let loop = try EventLoop(name: "test-plain-backpressure")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        async let accepted = listener.connections.first { _ in true }
        let highWater = 64 * 1024
        let client = try await PlainConnection.connect(
            host: "127.0.0.1", port: listener.port, on: loop,
            options: PlainConnection.Options(outboundHighWater: highWater))
        let serverSide = try #require(await accepted)  // held open, not read until later

        try await expectWriterParksUntilThePeerReads(
            label: "plain backpressure", highWater: highWater, slack: 16 * 1024,
            write: { try await client.write($0) }, close: { await client.close() },
            bufferState: { await client.bufferState() },
            readAll: { try await serverSide.chunks.reduce(0) { $0 + $1.count } })
        await listener.close()
    }

    @Test func connectingToAClosedPortFails() async throws {
        let loop = try EventLoop(name: "test-plain-refused")
        defer { loop.shutdown() }
        let refusing = try RefusingPort()
        let port = refusing.port
        let error = await #expect(throws: TransportError.self) {
            try await PlainConnection.connect(host: "127.0.0.1", port: port, on: loop)
        }
        _ = refusing
        #expect(error?.code == .io)
        #expect(error?.message.contains("refused") == true)
    }

    @Test func bindingAPortInUseFails() async throws {
        let loop = try EventLoop(name: "test-plain-in-use")
        defer { loop.shutdown() }
        let first = try await PlainListener.bind(on: loop)
        let error = await #expect(throws: TransportError.self) {
            try await PlainListener.bind(port: first.port, on: loop)
        }
        #expect(error?.code == .invalidAddress)
        await first.close()
    }
}

/// A plaintext listener whose connections echo everything back.
final class PlainEchoServer: Sendable {
    let listener: PlainListener
    let accepted = Locked(0)
    private let task: Task<Void, Never>

    init(loop: EventLoop) async throws {
        let listener = try await PlainListener.bind(on: loop)
        self.listener = listener
        let accepted = accepted
        task = Task {
            await withTaskGroup(of: Void.self) { group in
                for await connection in listener.connections {
                    accepted.withLock { $0 += 1 }
                    group.addTask {
                        do {
                            while let chunk = try await connection.read() { try await connection.write(chunk) }
                        } catch {}
                        await connection.close()
                    }
                }
            }
        }
    }

    var port: UInt16 { listener.port }

    /// Stops accepting and waits until every echo connection has ended.
    func stop() async {
        await listener.close()
        await task.value
    }
}

/// Writes `messages` and reads the echo concurrently; returns the echoed bytes.
func plainEchoRoundTrip(_ connection: PlainConnection, messages: [[UInt8]]) async throws -> [UInt8] {
    let total = messages.reduce(0) { $0 + $1.count }
    async let received: [UInt8] = {
        var bytes: [UInt8] = []
        while bytes.count < total, let chunk = try await connection.read() { bytes += chunk }
        return bytes
    }()
    for message in messages { try await connection.write(message) }
    return try await received
}
