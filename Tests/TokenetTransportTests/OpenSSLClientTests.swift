import Foundation
import Testing
import TokenetTestSupport

@testable import TokenetTransport

/// Interoperability: the stock `openssl s_client` completes mutual TLS 1.3 with a TLSListener.
@Suite(.timeLimit(.minutes(3))) struct OpenSSLClientTests {
    let certs = CertificateFixture.shared

    @Test func opensslSClientWithValidCertificateTalksToTLSListener() async throws {
        let loop = try EventLoop(name: "test-s-client")
        defer { loop.shutdown() }
        let listener = try await TLSListener.bind(context: certs.context(certs.server("tsp")), on: loop)

        // Standard output and error share one pipe, whose write end only the child keeps.
        let output = Pipe()
        let process = try SpawnedProcess(
            "/usr/bin/env",
            [
                "openssl", "s_client", "-connect", "127.0.0.1:\(listener.port)", "-tls1_3", "-brief",
                "-cert", certs.path("wallet.pem"), "-key", certs.path("wallet.key"), "-CAfile", certs.caFile,
                "-verify_return_error",
            ],
            standardInput: .pipe, standardOutput: .descriptor(output.fileHandleForWriting.fileDescriptor),
            standardError: .descriptor(output.fileHandleForWriting.fileDescriptor))
        try output.fileHandleForWriting.close()
        let input = try #require(process.standardInput)

        var connections = listener.connections.makeAsyncIterator()
        let connection = try #require(await connections.next())
        #expect(connection.peer == PeerIdentity(role: .wallet, nodeID: "wallet-1"))

        try await connection.write(Array("hello from tsp\n".utf8))
        input.write(Data("ping from s_client\n".utf8))
        var received: [UInt8] = []
        while !received.contains(UInt8(ascii: "\n")), let chunk = try await connection.read() { received += chunk }
        #expect(String(decoding: received, as: UTF8.self) == "ping from s_client\n")

        // End of input makes s_client send close_notify and exit.
        try input.close()
        #expect(try await connection.read() == nil)
        let status = try await offThePool { process.waitUntilExit(killingAfter: 60) }.status
        let transcript = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(status == 0, "s_client output:\n\(transcript)")
        #expect(transcript.contains("hello from tsp"), "s_client output:\n\(transcript)")
        #expect(transcript.contains("TLSv1.3"), "s_client output:\n\(transcript)")
        await connection.close()
        await listener.close()
    }

    /// A client that offers at most TLS 1.2 is refused, and the reason says so: OpenSSL's "unsupported protocol"
    /// named no version and no way out.
    @Test func aTLS12ClientIsRefusedWithTheVersionNamed() async throws {
        let loop = try EventLoop(name: "test-s-client-tls12")
        defer { loop.shutdown() }
        let failures = AsyncStream<TransportError>.makeStream()
        let listener = try await TLSListener.bind(
            context: certs.context(certs.server("tsp")), on: loop,
            onHandshakeFailure: { error, _ in failures.continuation.yield(error) })
        let process = try SpawnedProcess(
            "/usr/bin/env",
            [
                "openssl", "s_client", "-connect", "127.0.0.1:\(listener.port)", "-tls1_2", "-brief", "-cert",
                certs.path("wallet.pem"), "-key", certs.path("wallet.key"), "-CAfile", certs.caFile,
            ], standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .nullDevice)
        var iterator = failures.stream.makeAsyncIterator()
        let failure = try #require(await iterator.next())
        #expect(failure.message.contains("the peer speaks an older TLS than 1.3"), "\(failure)")
        _ = try await offThePool { process.waitUntilExit(killingAfter: 60) }
        await listener.close()
    }
}
