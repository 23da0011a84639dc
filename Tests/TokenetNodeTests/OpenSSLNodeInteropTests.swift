import Foundation
import Glibc
import Testing
import TokenetTestSupport
import TokenetTransport

@testable import TokenetNode

/// Interoperability with a running node: the stock `openssl s_client`, holding a certificate of the deployment's CA,
/// completes mutual TLS 1.3 with a `tsp-node` and receives the node's hello, the first frame of a session.
@Suite(.timeLimit(.minutes(3))) struct OpenSSLNodeInteropTests {
    let pki = DevelopmentPKI.shared

    @Test func opensslSClientCompletesAHandshakeWithATSPNode() async throws {
        let data = try TemporaryDirectory()
        let readyFile = data.path("ready.json")
        let node = try LaunchedProcess.tspNode(in: data)
        defer {
            node.process.send(SIGTERM)
            node.process.waitUntilExit(killingAfter: 30)
        }
        let address = try await PythonClientInteropTests.waitFor(node.process, "tsp-node's ready file") {
            FileManager.default.fileExists(atPath: readyFile) ? try ReadyFile.read(from: readyFile).listen : nil
        }

        // Standard output and error share one pipe, whose write end only the child keeps.
        let output = Pipe()
        let process = try SpawnedProcess(
            "/usr/bin/env",
            [
                "openssl", "s_client", "-connect", address, "-tls1_3", "-brief", "-cert", pki.path("operator.pem"),
                "-key", pki.path("operator.key"), "-CAfile", pki.path("ca.pem"), "-verify_return_error",
            ],
            standardInput: .pipe, standardOutput: .descriptor(output.fileHandleForWriting.fileDescriptor),
            standardError: .descriptor(output.fileHandleForWriting.fileDescriptor))
        try output.fileHandleForWriting.close()
        let input = try #require(process.standardInput)
        defer { process.waitUntilExit(killingAfter: 30) }

        // The node speaks first once the handshake is done: its hello follows s_client's report of the session.
        let reader = output.fileHandleForReading
        let transcript = try await offThePool { () -> Data in
            var transcript = Data()
            while !String(decoding: transcript, as: UTF8.self).contains("Verification"),
                case let chunk = reader.availableData, !chunk.isEmpty
            {
                transcript += chunk
            }
            return transcript
        }
        let text = String(decoding: transcript, as: UTF8.self)
        #expect(text.contains("CONNECTION ESTABLISHED"), "s_client output:\n\(text)")
        #expect(text.contains("Protocol version: TLSv1.3"), "s_client output:\n\(text)")
        #expect(text.contains("Verification: OK"), "s_client output:\n\(text)")

        // End of input makes s_client send close_notify and exit cleanly.
        try input.close()
        let rest = try await offThePool { reader.readDataToEndOfFile() }
        let status = try await offThePool { process.waitUntilExit(killingAfter: 60) }.status
        #expect(status == 0, "s_client output:\n\(text)\(String(decoding: rest, as: UTF8.self))")
        #expect(node.process.isRunning, "the node stopped after a client that sent no hello")
    }
}
