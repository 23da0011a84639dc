import Foundation
import Glibc
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport

@testable import TokenetNode

/// Certificates OpenSSL refuses for what they are, not for who signed them, are named for that: one made for
/// clients only served by a node read "its certificate is not signed by the CA of --cacert", and an RSA-1024 key
/// "its PEM block is damaged or cut short". A node now checks its own certificate as its peers will, at start.
@Suite(.timeLimit(.minutes(3))) struct CertificateProblemTests {
    let pki = DevelopmentPKI.shared

    /// Runs openssl with `arguments` in `directory`, waiting off the cooperative pool (`offThePool`).
    static func openssl(_ arguments: [String], in directory: TemporaryDirectory) async throws {
        let workingDirectory = directory.url.path
        let status = try await offThePool {
            let process = try SpawnedProcess(
                "/usr/bin/openssl", arguments, workingDirectory: workingDirectory, standardInput: .nullDevice,
                standardOutput: .nullDevice, standardError: .nullDevice)
            return process.waitUntilExit(killingAfter: 60).status
        }
        try #require(status == 0, "openssl \(arguments.joined(separator: " "))")
    }

    /// A `tokenet://tsp/tsp-1` certificate signed by the development CA with `extensions` (an openssl extfile). Its
    /// serial file is its own: `-CAcreateserial` alone writes `ca.srl` beside the shared CA, and two tests signing at
    /// once failed one of them.
    func certificate(_ name: String, bits: Int = 2048, extensions: String, in directory: TemporaryDirectory)
        async throws
    {
        try extensions.write(toFile: directory.path("\(name).ext"), atomically: true, encoding: .utf8)
        try await Self.openssl(
            [
                "req", "-new", "-newkey", "rsa:\(bits)", "-nodes", "-keyout", "\(name).key", "-out", "\(name).csr",
                "-subj", "/CN=tsp-1",
            ], in: directory)
        try await Self.openssl(
            [
                "x509", "-req", "-in", "\(name).csr", "-CA", pki.path("ca.pem"), "-CAkey", pki.path("ca.key"),
                "-CAcreateserial", "-CAserial", "\(name).srl", "-days", "2", "-out", "\(name).pem", "-extfile",
                "\(name).ext",
            ], in: directory)
    }

    /// A node refuses to start with it: every peer that connects would refuse it.
    @Test func aNodeCertificateMadeForClientsOnlyIsRefusedAtStart() async throws {
        let data = try TemporaryDirectory()
        try await certificate(
            "client-only", extensions: "subjectAltName=URI:tokenet://tsp/tsp-1\nextendedKeyUsage=clientAuth\n", in: data
        )
        let result = try await LaunchedProcess.run(
            "tsp-node",
            [
                "--listen", "127.0.0.1:0", "--data-dir", data.path("data"), "--cert", data.path("client-only.pem"),
                "--key", data.path("client-only.key"), "--ca", pki.path("ca.pem"),
            ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "--cert: \(data.path("client-only.pem")) is not made for serving TLS (unsuitable certificate purpose; "
                    + "its extended key usage lacks serverAuth)"),
            "\(result.stderr)")
    }

    /// A node calls its peers as a TLS client too (the TSP each issuer, the others the TSP): one whose certificate
    /// lacks clientAuth said READY, and then every call it made was refused. And a CA certificate is no node's
    /// identity: one with a tokenet:// name started, and its peers took it for the node.
    @Test(arguments: [
        (
            "server-only", "extendedKeyUsage=serverAuth\n",
            "is not made for TLS clients (unsuitable certificate purpose; its extended key usage lacks clientAuth)"
        ),
        (
            "ca-like", "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,digitalSignature\n",
            "is a CA certificate (basicConstraints CA:TRUE), which every peer refuses as an identity"
        ),
    ])
    func aNodeCertificateItsPeersWouldRefuseIsRefusedAtStart(name: String, extensions: String, message: String)
        async throws
    {
        let data = try TemporaryDirectory()
        try await certificate(name, extensions: "subjectAltName=URI:tokenet://tsp/tsp-1\n" + extensions, in: data)
        let result = try await LaunchedProcess.run(
            "tsp-node",
            [
                "--listen", "127.0.0.1:0", "--data-dir", data.path("data"), "--cert", data.path("\(name).pem"),
                "--key", data.path("\(name).key"), "--ca", pki.path("ca.pem"),
            ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    /// The CLI, against a server that serves one anyway, names it too.
    @Test func aServerCertificateMadeForClientsOnlyIsNamedSoByTheCLI() async throws {
        let data = try TemporaryDirectory()
        try await certificate(
            "client-only", extensions: "subjectAltName=URI:tokenet://tsp/tsp-1\nextendedKeyUsage=clientAuth\n", in: data
        )
        var router = RPCRouter()
        HealthService(services: []).register(on: &router)
        let result = try await runTokenet(
            servedOverTLSBy: router, certificate: data.path("client-only.pem"), key: data.path("client-only.key")
        ) { address in
            [
                "list", address, "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"),
            ]
        }
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "its certificate is not made for a server (its extended key usage lacks serverAuth)"),
            "\(result.stderr)")
        #expect(result.stderr.contains("unsuitable certificate purpose"), "\(result.stderr)")
    }

    /// A client certificate made for servers only: the node refuses it with "unsupported certificate" alone, so the
    /// CLI names it before it connects.
    @Test func aClientCertificateMadeForServersOnlyIsNamedSoByTheCLI() async throws {
        let data = try TemporaryDirectory()
        try await certificate(
            "server-only", extensions: "subjectAltName=URI:tokenet://operator/ops\nextendedKeyUsage=serverAuth\n",
            in: data)
        let result = try await runTokenet([
            "list", "127.0.0.1:9", "--cacert", pki.path("ca.pem"), "--cert", data.path("server-only.pem"), "--key",
            data.path("server-only.key"),
        ])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "cannot use the client certificate \(data.path("server-only.pem")) (given by --cert or TOKENET_CERT): "
                    + "it is not made for TLS clients (unsuitable certificate purpose; its extended key usage lacks "
                    + "clientAuth)"),
            "\(result.stderr)")
    }

    /// A certificate from another Tools/gen-certs run than --ca, or a node's certificate given as --ca: the node
    /// said READY, and then every peer refused it with nothing in its own log to say why.
    @Test(arguments: [false, true]) func aNodeCertificateItsOwnCADoesNotVerifyIsRefusedAtStart(leafAsCA: Bool)
        async throws
    {
        let data = try TemporaryDirectory()
        let ca = leafAsCA ? pki.path("tsp.pem") : pki.untrustedPath("ca.pem")
        let result = try await LaunchedProcess.run(
            "tsp-node",
            [
                "--listen", "127.0.0.1:0", "--data-dir", data.path("data"), "--cert", pki.path("tsp.pem"), "--key",
                pki.path("tsp.key"), "--ca", ca,
            ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "--cert: \(pki.path("tsp.pem")) does not verify against --ca \(ca) (unable to get local issuer "
                    + "certificate): peers that trust that CA would refuse this node"),
            "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: data.path("data")), "stopped before it opened its data")
    }

    @Test func anRSA1024CertificateIsTooWeakNotDamaged() async throws {
        let data = try TemporaryDirectory()
        try await certificate("weak", bits: 1024, extensions: "subjectAltName=URI:tokenet://tsp/tsp-1\n", in: data)
        let result = try await LaunchedProcess.run(
            "tsp-node",
            [
                "--listen", "127.0.0.1:0", "--data-dir", data.path("data"), "--cert", data.path("weak.pem"), "--key",
                data.path("weak.key"), "--ca", pki.path("ca.pem"),
            ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("is too weak for OpenSSL's security level (ee key too small)"), "\(result.stderr)")
        #expect(!result.stderr.contains("damaged"), "\(result.stderr)")
    }
}

/// A node whose certificate expires soon says so at start: when it expired, every peer refused its handshakes and
/// its own log named only the peers.
@Suite struct CertificateExpiryWarningTests {
    @Test func aCertificateThatExpiresWithinAWeekIsWarnedOf() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(NodeRuntime.expiryWarning(now.addingTimeInterval(8 * 86_400), certificate: "tsp.pem", now: now) == nil)
        #expect(NodeRuntime.expiryWarning(nil, certificate: "tsp.pem", now: now) == nil)
        let days = NodeRuntime.expiryWarning(now.addingTimeInterval(3 * 86_400 + 60), certificate: "tsp.pem", now: now)
        #expect(
            days?.hasPrefix("this node's certificate tsp.pem expires in 3 day(s), on 2027-01-18T") == true,
            "\(days ?? "")")
        #expect(days?.hasSuffix("make a new one with Tools/gen-certs and restart the node") == true)
        let minutes = NodeRuntime.expiryWarning(now.addingTimeInterval(45), certificate: "tsp.pem", now: now)
        #expect(minutes?.contains("expires in 1 minute(s)") == true, "\(minutes ?? "")")
        // To the nearest unit: 7 days less 30 s is 7 days, 1 min 59.6 s is 2 minutes.
        let almostAWeek = NodeRuntime.expiryWarning(now.addingTimeInterval(7 * 86_400 - 30), certificate: "t", now: now)
        #expect(almostAWeek?.contains("expires in 7 day(s)") == true, "\(almostAWeek ?? "")")
        let twoMinutes = NodeRuntime.expiryWarning(now.addingTimeInterval(119.6), certificate: "t", now: now)
        #expect(twoMinutes?.contains("expires in 2 minute(s)") == true, "\(twoMinutes ?? "")")
    }
}
