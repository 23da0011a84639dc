import Foundation
import Testing
import TokenetTestSupport

@testable import TokenetTransport

/// `TLSContext.checkOwnCertificate`: what a client can find wrong with its certificate before a server refuses it.
@Suite struct OwnCertificateTests {
    let certs = CertificateFixture.shared

    @Test func aValidCertificateNamesItsIdentity() throws {
        let context = try certs.context(certs.client("operator"))
        #expect(try context.checkOwnCertificate() == PeerIdentity(role: .operator, nodeID: "operator-1"))
    }

    /// Tools/gen-certs makes certificates valid for 825 days from now.
    @Test func anExpiredCertificateIsNamedWithItsEndDate() throws {
        let context = try certs.context(certs.client("operator"))
        let later = Date(timeIntervalSinceNow: 900 * 86_400)
        let error = #expect(throws: TransportError.self) { try context.checkOwnCertificate(at: later) }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("operator.pem expired on ") == true, "\(String(describing: error))")
        let directory = (certs.path("operator.pem") as NSString).deletingLastPathComponent
        #expect(
            error?.message.hasSuffix(
                "; run 'tokenet pki init \(directory)' (or Tools/gen-certs \(directory)) again, which makes an expired "
                    + "certificate anew with its names, or give a valid one") == true, "\(String(describing: error))")
    }

    /// A certificate kept elsewhere than its CA: the advice names the CA's directory, where `pki init` renews it
    /// with the CA's key; run in the certificate's own, it made a new CA there, which --ca then refused.
    @Test func anExpiredCertificateKeptApartFromItsCANamesTheCAsDirectory() throws {
        let apart = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-own-cert-\(getpid())")
        try FileManager.default.createDirectory(at: apart, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: apart) }
        for file in ["operator.pem", "operator.key"] {
            try FileManager.default.copyItem(
                atPath: certs.path(file), toPath: apart.appendingPathComponent(file).path)
        }
        let context = try certs.context(
            .client(
                certificateChainFile: apart.appendingPathComponent("operator.pem").path,
                privateKeyFile: apart.appendingPathComponent("operator.key").path, trustedCAFile: certs.caFile))
        let error = #expect(throws: TransportError.self) {
            try context.checkOwnCertificate(at: Date(timeIntervalSinceNow: 900 * 86_400))
        }
        let directory = (certs.caFile as NSString).deletingLastPathComponent
        #expect(
            error?.message.hasSuffix(
                "; run 'tokenet pki init \(directory)' (or Tools/gen-certs \(directory)) again, which makes an expired "
                    + "certificate anew with its names in that directory (the CA's), and give the new one, or give a "
                    + "valid one") == true, "\(String(describing: error))")
    }

    @Test func aCertificateNotYetValidIsNamedWithItsStartDate() throws {
        let context = try certs.context(certs.client("operator"))
        let earlier = Date(timeIntervalSinceNow: -86_400)
        let error = #expect(throws: TransportError.self) { try context.checkOwnCertificate(at: earlier) }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("operator.pem is not valid before ") == true, "\(String(describing: error))")
        #expect(error?.message.hasSuffix("; check this machine's clock, or wait until then") == true)
    }

    @Test func aCertificateWithoutATokenetIdentityIsRefused() throws {
        let context = try certs.context(certs.client("plain"))
        let error = #expect(throws: TransportError.self) { try context.checkOwnCertificate() }
        #expect(error?.code == .peerIdentity)
        #expect(error?.message.contains("plain.pem has no tokenet://ROLE/ID") == true, "\(String(describing: error))")
    }

    /// A certificate the development CA signed with basicConstraints CA:TRUE and `tokenet://operator/op-ca`: one that
    /// can sign others, which was accepted as an operator by the nodes and as a node by the CLI.
    static func caLikeCertificate(in directory: URL) throws -> (certificate: String, key: String) {
        let pki = DevelopmentPKI.shared
        try "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\n"
            .appending("subjectAltName=URI:tokenet://operator/op-ca\n")
            .write(to: directory.appendingPathComponent("ca-like.ext"), atomically: true, encoding: .utf8)
        for arguments in [
            ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca-like.key"],
            ["req", "-new", "-key", "ca-like.key", "-subj", "/CN=op-ca", "-out", "ca-like.csr"],
            [
                "x509", "-req", "-in", "ca-like.csr", "-CA", pki.path("ca.pem"), "-CAkey", pki.path("ca.key"),
                "-CAcreateserial", "-CAserial", "ca-like.srl", "-days", "2", "-out", "ca-like.pem", "-extfile",
                "ca-like.ext",
            ],
        ] {
            let process = try SpawnedProcess(
                "/usr/bin/openssl", arguments, workingDirectory: directory.path, standardInput: .nullDevice,
                standardOutput: .nullDevice, standardError: .nullDevice)
            process.waitUntilExit(killingAfter: 60)
            try #require(process.termination?.status == 0, "openssl \(arguments.joined(separator: " "))")
        }
        return (
            directory.appendingPathComponent("ca-like.pem").path, directory.appendingPathComponent("ca-like.key").path
        )
    }

    /// A chain file with its CA first reads as a key that does not belong to the certificate: said as what it is.
    @Test func aChainWithItsCAFirstIsSaidSo() throws {
        let pki = DevelopmentPKI.shared
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-chain-order-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let reversed = directory.appendingPathComponent("reversed.pem").path
        let bundle =
            try String(contentsOfFile: pki.path("ca.pem"), encoding: .utf8)
            + String(contentsOfFile: pki.path("wallet.pem"), encoding: .utf8)
        try bundle.write(toFile: reversed, atomically: true, encoding: .utf8)
        let configuration = TLSConfiguration.client(
            certificateChainFile: reversed, privateKeyFile: pki.path("wallet.key"), trustedCAFile: pki.path("ca.pem"))
        let error = #expect(throws: TransportError.self) {
            _ = try TLSContext(configuration: configuration, keyLogFile: nil)
        }
        #expect(
            error?.message.contains("the first certificate in \(reversed) is a CA's") == true,
            "\(String(describing: error))")
        #expect(error?.message.contains("put the node's own certificate first") == true)
    }

    @Test func aCACertificateIsNoIdentityOnEitherSide() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-ca-like-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (certificate, key) = try Self.caLikeCertificate(in: directory)
        let configuration = TLSConfiguration.client(
            certificateChainFile: certificate, privateKeyFile: key, trustedCAFile: certs.caFile)
        let own = #expect(throws: TransportError.self) { try certs.context(configuration).checkOwnCertificate() }
        #expect(own?.code == .peerIdentity)
        #expect(own?.message.contains("ca-like.pem is a CA certificate (basicConstraints CA:TRUE)") == true)
        let pair = try EnginePair(client: configuration, server: certs.server())
        let refused = #expect(throws: TransportError.self) { try pair.handshake() }
        #expect(refused?.code == .peerIdentity, "\(String(describing: refused))")
        #expect(refused?.message.contains("the peer presented a CA certificate") == true)
    }

    /// The server side of the same refusal, in memory: the client's first read after its handshake names the alert.
    @Test func aClientLearnsWhyTheServerRefusedItsCertificate() throws {
        let pair = try EnginePair(client: certs.client("wallet", untrusted: true), server: certs.server())
        #expect(throws: TransportError.self) { try pair.handshake() }
        pair.shuttle()
        let error = #expect(throws: TransportError.self) { try pair.client.readPlaintext() }
        #expect(error?.code == .certificateRefused)
        #expect(error?.message == "the server refused this client's certificate (unknown CA)")
    }
}
