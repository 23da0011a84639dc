import Foundation
import Glibc
import Testing

@testable import TokenetTransport

/// Cancelling the task that awaits a connection ends the attempt at once: a peer that accepts the TCP connection
/// but never answers the handshake must not hold a caller until the handshake timeout (here a minute), whatever
/// deadline the caller has.
@Suite(.timeLimit(.minutes(3))) struct ConnectCancellationTests {
    let certs = CertificateFixture.shared

    @Test func aCancelledTLSConnectEndsBeforeItsHandshakeTimeout() async throws {
        let loop = try EventLoop(name: "test-connect-cancel")
        defer { loop.shutdown() }
        // Listens, and never accepts or answers: the kernel completes the TCP handshake from the backlog.
        let (listener, port) = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { Glibc.close(listener) }
        let context = try TLSContext(configuration: certs.client("wallet"))
        let options = TLSConnection.Options(handshakeTimeout: .seconds(60))
        let attempt = Task {
            try await TLSConnection.connect(
                host: "127.0.0.1", port: port, context: context, on: loop, options: options)
        }
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        attempt.cancel()
        let error = await #expect(throws: TransportError.self) { _ = try await attempt.value }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        #expect(ContinuousClock.now - started < .seconds(30), "the attempt waited for its handshake timeout")
    }

    @Test func aPlainConnectCancelledBeforeItStartsNeverConnects() async throws {
        let loop = try EventLoop(name: "test-connect-cancel-early")
        defer { loop.shutdown() }
        let (listener, port) = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { Glibc.close(listener) }
        let attempt = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await PlainConnection.connect(host: "127.0.0.1", port: port, on: loop)
        }
        let error = await #expect(throws: TransportError.self) { _ = try await attempt.value }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
    }
}
