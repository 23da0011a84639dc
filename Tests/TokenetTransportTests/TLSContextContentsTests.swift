import Foundation
import Testing

@testable import TokenetTransport

/// A context built from bytes already read (what the CLI read from a pipe) rather than from paths: the paths below
/// name no file, so a context that opened them would fail.
@Suite struct TLSContextContentsTests {
    let certs = CertificateFixture.shared

    func bytes(_ name: String, untrusted: Bool = false) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: certs.path(name, untrusted: untrusted))))
    }

    /// A client configuration whose three files are the pipes `/nonexistent/pipe-N`, holding `certificate`, `key`
    /// and `ca`.
    func piped(certificate: [UInt8], key: [UInt8], ca: [UInt8]) -> TLSConfiguration {
        var configuration = TLSConfiguration.client(
            certificateChainFile: "/nonexistent/pipe-1", privateKeyFile: "/nonexistent/pipe-2",
            trustedCAFile: "/nonexistent/pipe-3")
        configuration.contents = [
            "/nonexistent/pipe-1": certificate, "/nonexistent/pipe-2": key, "/nonexistent/pipe-3": ca,
        ]
        return configuration
    }

    /// The certificate with a chain certificate after it, its key, and a CA bundle whose trusted CA comes second
    /// (every certificate of the bundle is added, not only the first) serve a full handshake.
    @Test func aContextFromContentsHandshakes() throws {
        let client = piped(
            certificate: try bytes("wallet.pem") + bytes("ca.pem"), key: try bytes("wallet.key"),
            ca: try bytes("ca.pem", untrusted: true) + bytes("ca.pem"))
        let pair = try EnginePair(client: client, server: certs.server("tsp"))
        let status = try pair.handshake()
        #expect(status.client == .complete)
        #expect(status.server == .complete)
        #expect(pair.server.peer == PeerIdentity(role: .wallet, nodeID: "wallet-1"))
        #expect(pair.client.peer == PeerIdentity(role: .tsp, nodeID: "tsp-1"))
    }

    /// Contents are refused as files are: by the text checks, by OpenSSL's reading (in words), and a key that is
    /// not the certificate's.
    @Test(arguments: [
        (0, "hello\n", "certificate file /nonexistent/pipe-1 is not a PEM file"),
        (1, "", "private key file /nonexistent/pipe-2 is empty"),
        (
            1, "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----\n",
            "private key file /nonexistent/pipe-2 is encrypted with a passphrase"
        ),
        (
            2, "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n",
            "CA certificate file /nonexistent/pipe-3 cannot be read as a CA certificate"
        ),
        (1, "tsp.key", "the private key /nonexistent/pipe-2 does not belong to the certificate /nonexistent/pipe-1"),
    ])
    func unusableContentsAreNamed(file: Int, content: String, message: String) throws {
        var contents = [try bytes("wallet.pem"), try bytes("wallet.key"), try bytes("ca.pem")]
        contents[file] = content.hasSuffix(".key") ? try bytes(content) : Array(content.utf8)
        let configuration = piped(certificate: contents[0], key: contents[1], ca: contents[2])
        #expect {
            _ = try certs.context(configuration)
        } throws: { error in
            let text = (error as? TransportError)?.message ?? ""
            return text.hasPrefix(message) && !text.contains("error:")
        }
    }
}
