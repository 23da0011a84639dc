import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

/// The CLI with an SSLKEYLOGFILE it cannot write.
@Suite struct KeyLogCommandTests {
    /// It said "cannot load the TLS identity", sending the person to certificates that were fine.
    @Test func aKeyLogThatCannotBeWrittenIsNamedAsSuch() async throws {
        let pki = DevelopmentPKI.shared
        let directory = try TemporaryDirectory()
        let keyLog = directory.path("no-such-directory/keys.log")
        let result = try await runTokenet(
            [
                "list", "127.0.0.1:1", "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"),
            ], environment: ["SSLKEYLOGFILE": keyLog])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr
                == "tokenet: SSLKEYLOGFILE=\(keyLog) cannot be written (No such file or directory): name a file in a "
                + "directory that exists, or unset SSLKEYLOGFILE\n")
    }

    /// A key log that was there and that other users can read is refused: its secrets decrypt the traffic. A file
    /// the CLI makes itself is its user's only.
    @Test func aKeyLogOthersCanReadIsRefusedAndANewOneIsTheOwnersOnly() async throws {
        let pki = DevelopmentPKI.shared
        let directory = try TemporaryDirectory()
        let keyLog = directory.path("keys.log")
        _ = FileManager.default.createFile(
            atPath: keyLog, contents: Data(), attributes: [.posixPermissions: 0o644])
        let arguments = [
            "list", "127.0.0.1:1", "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
            pki.path("operator.key"),
        ]
        let refused = try await runTokenet(arguments, environment: ["SSLKEYLOGFILE": keyLog])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "SSLKEYLOGFILE=\(keyLog) is readable by other users (mode 644), and its TLS secrets decrypt the "
                    + "traffic: run chmod 600 \(keyLog)"), "\(refused.stderr)")
        let fresh = directory.path("new.log")
        _ = try await runTokenet(arguments, environment: ["SSLKEYLOGFILE": fresh])
        let mode = try FileManager.default.attributesOfItem(atPath: fresh)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// A node stopped with status 1 ("cannot serve"), where the README has configuration mistakes exit 2.
    @Test func aNodeWithAKeyLogThatCannotBeWrittenIsMisconfigured() throws {
        let pki = DevelopmentPKI.shared
        let directory = try TemporaryDirectory()
        let keyLog = directory.path("no-such-directory/keys.log")
        var environment = ProcessInfo.processInfo.environment
        environment["SSLKEYLOGFILE"] = keyLog
        let node = try SpawnedProcess(
            try BuiltExecutables.url(of: "tsp-node").path,
            [
                "--listen", "127.0.0.1:0", "--data-dir", directory.path("data"), "--cert", pki.path("tsp.pem"),
                "--key", pki.path("tsp.key"), "--ca", pki.path("ca.pem"),
            ], environment: environment, standardInput: .nullDevice, standardOutput: .nullDevice,
            standardError: .file(directory.path("stderr")))
        let termination = node.waitUntilExit(killingAfter: 60)
        let stderr = (try? String(contentsOfFile: directory.path("stderr"), encoding: .utf8)) ?? ""
        #expect(termination.reason == .exit && termination.status == 2, "\(stderr)")
        #expect(stderr.contains("cannot be written (No such file or directory)"), "\(stderr)")
    }
}
