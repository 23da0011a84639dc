import Foundation
import Glibc
import Synchronization
import Testing

@testable import TokenetTransport

/// A listener whose connections echo everything back, remembering who connected.
final class EchoServer: Sendable {
    let listener: TLSListener
    let peers = Locked<[PeerIdentity]>([])
    let failures: AsyncStream<TransportError>
    /// The peer each failure named, in order (`address:port`).
    let failurePeers = Locked<[String?]>([])
    private let task: Task<Void, Never>

    init(
        loop: EventLoop, configuration: TLSConfiguration, options: TLSConnection.Options = TLSConnection.Options()
    ) async throws {
        let (failures, failureSink) = AsyncStream<TransportError>.makeStream()
        self.failures = failures
        let failurePeers = failurePeers
        let listener = try await TLSListener.bind(
            context: CertificateFixture.shared.context(configuration), on: loop, options: options
        ) { failure, peer in
            failurePeers.withLock { $0.append(peer) }
            failureSink.yield(failure)
        }
        self.listener = listener
        let peers = peers
        task = Task {
            await withTaskGroup(of: Void.self) { group in
                for await connection in listener.connections {
                    peers.withLock { $0.append(connection.peer) }
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

    /// The next handshake failure the listener reported.
    func nextFailure() async -> TransportError? {
        var iterator = failures.makeAsyncIterator()
        return await iterator.next()
    }

    /// Stops accepting and waits until every echo connection has ended.
    func stop() async {
        await listener.close()
        await task.value
    }
}

/// A shareable reference to a `Mutex`.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }
}

func connect(
    _ configuration: TLSConfiguration, port: UInt16, loop: EventLoop,
    options: TLSConnection.Options = TLSConnection.Options()
) async throws -> TLSConnection {
    try await TLSConnection.connect(
        host: "127.0.0.1", port: port, context: CertificateFixture.shared.context(configuration), on: loop,
        options: options)
}

/// Writes `messages` and reads the echo concurrently; returns the echoed bytes.
func echoRoundTrip(_ connection: TLSConnection, messages: [[UInt8]]) async throws -> [UInt8] {
    let total = messages.reduce(0) { $0 + $1.count }
    async let received: [UInt8] = {
        var bytes: [UInt8] = []
        while bytes.count < total, let chunk = try await connection.read() { bytes += chunk }
        return bytes
    }()
    for message in messages { try await connection.write(message) }
    return try await received
}

/// Connects and expects the connection to be refused, either during the handshake or (TLS 1.3 client
/// certificates are checked after the client finished) on the first read. Returns the client-side error.
func expectRefused(_ configuration: TLSConfiguration, port: UInt16, loop: EventLoop) async -> TransportError? {
    do {
        let connection = try await connect(configuration, port: port, loop: loop)
        let bytes = try await connection.read()
        Issue.record("connection was not refused; read returned \(String(describing: bytes))")
        return nil
    } catch let error as TransportError {
        return error
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

/// A plain blocking TCP socket for sending bytes that are not TLS at all.
/// A loopback port that refuses connections for as long as this value lives: a socket bound to it that never
/// listens. A closed listener's port would do only until another test's listener is given the same port.
struct RefusingPort: ~Copyable {
    let fd: Int32
    let port: UInt16

    init() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(socketFD, $0, length) == 0 && getsockname(socketFD, $0, &length) == 0
            }
        }
        guard bound else {
            let error = errno
            close(socketFD)
            throw TransportError(.io, "binding a refusing port failed: errno \(error)")
        }
        fd = socketFD
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }
}

struct RawTCPClient: ~Copyable {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 { throw TransportError(.io, "raw connect failed: errno \(errno)") }
    }

    func send(_ text: String) {
        send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    deinit { close(fd) }
}

func pattern(_ count: Int, seed: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed) }
}

/// The backpressure check both connection kinds share: a writer to a peer that does not read parks once the
/// outbound buffer passes `highWater` (by at most `slack`, one slice handed to the engine), and once the peer reads,
/// every written byte arrives.
func expectWriterParksUntilThePeerReads(
    label: String,
    highWater: Int,
    slack: Int,
    write: @escaping @Sendable ([UInt8]) async throws -> Void,
    close: @escaping @Sendable () async -> Void,
    bufferState: @Sendable () async -> ConnectionBufferState,
    readAll: () async throws -> Int
) async throws {
    let chunk = pattern(64 * 1024, seed: 5)
    let cap = 64 << 20  // far beyond what the kernel buffers on loopback
    let written = Mutex(0)
    let stop = Mutex(false)
    let writer = Task {
        while !stop.withLock({ $0 }), written.withLock({ $0 }) < cap {
            try await write(chunk)
            written.withLock { $0 += chunk.count }
        }
        await close()
    }

    // Wait until the writer is parked on a full buffer, or has pushed an unreasonable amount through.
    var state = await bufferState()
    while !state.hasWaitingWriter && written.withLock({ $0 }) < cap {
        try await Task.sleep(for: .milliseconds(10))
        state = await bufferState()
    }
    #expect(state.hasWaitingWriter)
    #expect(written.withLock { $0 } < cap)
    #expect(state.peakOutboundBuffered <= highWater + slack)
    let parkedAfter = written.withLock { $0 }
    print("\(label): writer parked after \(parkedAfter) bytes; peak buffer \(state.peakOutboundBuffered)")

    // Once the peer reads, the writer proceeds and every byte arrives.
    stop.withLock { $0 = true }
    let received = try await readAll()
    try await writer.value
    #expect(received == written.withLock { $0 })
    #expect(received % chunk.count == 0)
}
