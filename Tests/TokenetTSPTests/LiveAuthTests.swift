import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// Strong authentication over real processes: a login code replayed after `tsp-node` is killed and restarted, and a
/// scan of every node's files after the demo (which enrols and logs in the demo user) for secrets in clear.
@Suite(.serialized) struct LiveAuthTests {
    @Test func aLoginCodeReplayedAfterARealRestartIsRefused() async throws {
        let loop = try EventLoop(name: "tsp-live-auth")
        defer { loop.shutdown() }
        let dataDirectory = try TSPHarness.temporaryDirectory()
        // No issuer listens there: enrolment and login never call the issuer.
        let first = try await LiveNodeTests.Node(dataDirectory: dataDirectory, issuerPort: 9)
        defer { first.kill() }
        let issuerClient = try await LiveNodeTests.client("issuer", port: first.port, loop: loop)
        _ = try await TspV1.Issuers.Client(issuerClient).registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: "bank-a", displayName: "Bank A", binRanges: [TspV1.BinRange(low: "411111", high: "411111")],
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        let activation = try #require(
            try await TspV1.Enrolment.Client(issuerClient).registerEnrolment(
                .init(userID: "ch-alice", accountIds: ["acc-1"])
            ).activations.first)
        let activated = try await TspV1.Authentication.Client(issuerClient).verifyActivation(
            .init(activationCode: activation.activationCode, referenceID: activation.referenceID))
        let user = try #require(activated.userCredential)
        let device = try #require(activated.deviceCredential)
        let login = TspV1.LoginRequest(
            userCredentialID: user.credentialID, userCode: try AuthTests.code(user, 0),
            deviceCredentialID: device.credentialID, deviceCode: try AuthTests.code(device, 0))
        #expect(try await TspV1.Authentication.Client(issuerClient).login(login).result == .success)
        first.kill()
        #expect(first.process.termination?.reason == .uncaughtSignal)

        let second = try await LiveNodeTests.Node(dataDirectory: dataDirectory, issuerPort: 9)
        defer { second.kill() }
        let again = TspV1.Authentication.Client(try await LiveNodeTests.client("issuer", port: second.port, loop: loop))
        let replay = try await again.login(login)
        #expect(replay.result == .incorrectCode)
        #expect(replay.accessToken.isEmpty)
        let next = try await again.login(
            .init(
                userCredentialID: user.credentialID, userCode: try AuthTests.code(user, 1),
                deviceCredentialID: device.credentialID, deviceCode: try AuthTests.code(device, 1)))
        #expect(next.result == .success)
        // The same activation code cannot provision a second pair after the restart either.
        let reused = try await again.verifyActivation(
            .init(activationCode: activation.activationCode, referenceID: activation.referenceID))
        #expect(reused.result == .alreadyUsed)
    }

    /// The fixture's card numbers, the demo's PIN, the app's device PIN and every HOTP secret (raw, hex, base64):
    /// none of them may be readable in any node's database or log after the demo.
    @Test func afterTheDemoNoSecretIsInClearInAnyNodesFiles() async throws {
        let base = try TSPHarness.temporaryDirectory()
        let tokenet = try Self.executable("tokenet")
        // The demo takes tens of seconds: waited for on a thread of its own, not one of the test runner's few.
        let result = try await offThePool {
            try Self.run(tokenet, ["demo", "--keep-dir", "--timeout", "60"], temporaryDirectory: base)
        }
        try #require(result.status == 0, "\(result.output)")
        let workspace = try #require(
            try FileManager.default.contentsOfDirectory(atPath: base).first { $0.hasPrefix("tokenet-demo.") })
        let root = base + "/" + workspace

        // The secrets, opened with the nodes' own vault keys.
        let tspVault = try DataVault(keyFile: root + "/tsp-node/data/keys/data-vault.key")
        let tspDatabase = try Database.open(path: root + "/tsp-node/data/tsp.sqlite")
        var secrets: [[UInt8]] = []
        for row in try tspDatabase.query("SELECT id, secret_sealed FROM auth_credentials") {
            secrets.append(
                try tspVault.open(try row.blob(1), associatedData: Array("hotp-credential:\(try row.text(0))".utf8)))
        }
        try #require(secrets.count == 4, "two accounts, two credentials each")
        let issuerVault = try DataVault(keyFile: root + "/issuer-node/data/issuer-vault.key")
        let issuerDatabase = try Database.open(path: root + "/issuer-node/data/issuer.sqlite")
        let sealedDevicePIN = try #require(
            try issuerDatabase.queryOne("SELECT device_pin_sealed FROM app_users WHERE user_id = 'ch-chloe'"))
        let devicePIN = try issuerVault.open(
            try sealedDevicePIN.blob(0), associatedData: Array("device-pin:ch-chloe".utf8))

        var needles: [(String, [UInt8])] = [("device PIN", devicePIN)]
        for (index, secret) in secrets.enumerated() {
            needles.append(("HOTP secret \(index)", secret))
            needles.append(
                ("HOTP secret \(index) (hex)", Array(secret.map { String(format: "%02x", $0) }.joined().utf8)))
            needles.append(("HOTP secret \(index) (base64)", Array(Data(secret).base64EncodedString().utf8)))
            needles.append(("HOTP secret \(index) (base64url)", Array(Base64URL.encode(secret).utf8)))
        }
        let fixture = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Tools/fixtures/issuer.json"), encoding: .utf8)
        for match in fixture.matches(of: /"pan": "(\d+)"/) {
            needles.append(("PAN ending \(match.output.1.suffix(4))", Array(match.output.1.utf8)))
        }

        // The scan does see what the nodes write: the enrolled user's id is in the issuer's log.
        let issuerLog = try #require(FileManager.default.contents(atPath: root + "/issuer-node/issuer-node.stderr.log"))
        #expect(Self.find(Array("user=ch-chloe".utf8), in: Array(issuerLog)) != nil)
        var scanned = 0
        for node in ["tsp-node", "issuer-node", "wallet-node"] {
            let directory = root + "/" + node
            let files = try #require(FileManager.default.subpaths(atPath: directory))
            for file in files where !file.hasPrefix("data/keys") && !file.hasSuffix(".key") && !file.hasSuffix(".pem") {
                guard let data = FileManager.default.contents(atPath: directory + "/" + file) else { continue }
                let bytes = Array(data)
                scanned += 1
                for (name, needle) in needles {
                    #expect(Self.find(needle, in: bytes) == nil, "\(name) in \(node)/\(file)")
                }
                // The PIN is four digits: only a standalone "2580" (no digit or letter around it) counts.
                #expect(
                    Self.find(Array("2580".utf8), in: bytes, standalone: true) == nil, "the demo PIN in \(node)/\(file)"
                )
            }
        }
        #expect(scanned >= 9, "databases and logs of the three nodes")
        try? FileManager.default.removeItem(atPath: base)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], standalone: Bool = false) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        func isWord(_ byte: UInt8) -> Bool {
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
        }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            guard haystack[start..<(start + needle.count)].elementsEqual(needle) else { continue }
            if standalone {
                if start > 0, isWord(haystack[start - 1]) { continue }
                let end = start + needle.count
                if end < haystack.count, isWord(haystack[end]) { continue }
            }
            return start
        }
        return nil
    }

    static func executable(_ name: String) throws -> URL {
        let tsp = try LiveNodeTests.Node.executable()
        return tsp.deletingLastPathComponent().appendingPathComponent(name)
    }

    static func run(_ executable: URL, _ arguments: [String], temporaryDirectory: String) throws -> (
        status: Int32, output: String
    ) {
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporaryDirectory
        let output = temporaryDirectory + "/demo.out"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        // Both streams share one open file, so neither overwrites what the other wrote.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        let process = try SpawnedProcess(
            executable.path, arguments, environment: environment, standardInput: .nullDevice,
            standardOutput: .descriptor(handle.fileDescriptor), standardError: .descriptor(handle.fileDescriptor))
        try handle.close()
        // The demo's own --timeout ends it well before; a demo that hangs is killed, and the test fails.
        let termination = process.waitUntilExit(killingAfter: 300)
        return (termination.status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }
}
