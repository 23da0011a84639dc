import Foundation
import Testing

@testable import TokenetTransport

@Suite(.timeLimit(.minutes(3))) struct TransportFailureTests {
    let certs = CertificateFixture.shared

    /// Checked before OpenSSL reads it, so the message gives the system's reason in words, not OpenSSL's codes.
    @Test func missingCertificateFileIsAConfigurationErrorWithTheSystemsReason() {
        let configuration = TLSConfiguration.server(
            certificateChainFile: "/nonexistent/tsp.pem", privateKeyFile: certs.path("tsp.key"),
            trustedCAFile: certs.caFile)
        let error = #expect(throws: TransportError.self) { try TLSContext(configuration: configuration) }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("/nonexistent/tsp.pem") == true)
        #expect(error?.message.contains("No such file or directory") == true, "\(String(describing: error))")
        #expect(error?.message.contains("error:") == false)
    }

    @Test func mismatchedKeyIsRejected() {
        let configuration = TLSConfiguration.server(
            certificateChainFile: certs.path("tsp.pem"), privateKeyFile: certs.path("wallet.key"),
            trustedCAFile: certs.caFile)
        let error = #expect(throws: TransportError.self) { try TLSContext(configuration: configuration) }
        #expect(error?.code == .configuration)
    }

    @Test func serverWithoutCertificateIsRejected() {
        let configuration = TLSConfiguration(
            side: .server, certificateChainFile: nil, privateKeyFile: nil, trustedCAFile: certs.caFile)
        let error = #expect(throws: TransportError.self) { try TLSContext(configuration: configuration) }
        #expect(error?.code == .configuration)
    }

    @Test func connectingToAClosedPortFails() async throws {
        let loop = try EventLoop(name: "test-refused")
        defer { loop.shutdown() }
        let refusing = try RefusingPort()
        let port = refusing.port
        let error = await #expect(throws: TransportError.self) {
            try await connect(certs.client(), port: port, loop: loop)
        }
        _ = refusing
        #expect(error?.code == .io)
        #expect(error?.message.contains("refused") == true)
        // Read in logs and messages as a sentence, without the code's name ("io: connect failed: …").
        #expect(error.map { "\($0)" } == error?.message)
    }

    @Test func malformedAddressIsRejected() async throws {
        let loop = try EventLoop(name: "test-address")
        defer { loop.shutdown() }
        let error = await #expect(throws: TransportError.self) {
            try await TLSConnection.connect(
                host: "not an address", port: 1, context: certs.context(certs.client()), on: loop)
        }
        #expect(error?.code == .invalidAddress)
    }

    @Test func shuttingDownTheLoopFailsPendingReads() async throws {
        let loop = try EventLoop(name: "test-stop")
        let listener = try await TLSListener.bind(context: certs.context(certs.server()), on: loop)
        async let accepted = listener.connections.first { _ in true }
        let client = try await connect(certs.client(), port: listener.port, loop: loop)
        _ = try #require(await accepted)
        let pending = Task { try await client.read() }
        loop.shutdown()
        let error = await #expect(throws: TransportError.self) { try await pending.value }
        #expect(error?.code == .eventLoopStopped)
        await #expect(throws: TransportError.self) { try await client.write([1, 2, 3]) }
    }
}
