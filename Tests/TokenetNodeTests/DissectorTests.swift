import Foundation
import Testing
import TokenetTestSupport

/// The Wireshark dissector (`Tools/dissector/tokenet.lua`, run through `tokenet-shark`) against a live capture:
/// `Tools/dissector/check-dissector` starts a TLS and a plaintext `tsp-node` and a `tokenet-bench server` with
/// SSLKEYLOGFILE set, captures their ports on `lo` while the CLI and the independent Python client call them, and
/// checks every frame, call, status and decoded message the dissector shows — and that without the secrets it
/// shows none. Capturing needs root (CI runs as root).
@Suite struct DissectorTests {
    /// A capture named without -r is refused with how to read it: tshark took the file name for a capture filter and
    /// started capturing on the first interface (or failed to, without the rights).
    @Test func aCaptureNamedWithoutDashRSaysHowToReadIt() async throws {
        let directory = try TemporaryDirectory()
        let capture = directory.path("capture.pcapng")
        try Data().write(to: URL(fileURLWithPath: capture))
        // After options as well as before them (`-V capture`): an option's value (`-O tokenet`) is no capture.
        for arguments in [[capture, "-V"], ["-V", "-O", "tokenet", capture]] {
            let result = try await offThePool { () throws -> ProcessResult in
                try LaunchedProcess(
                    executable: URL(fileURLWithPath: PackageRoot.path("Tools/dissector/tokenet-shark")), arguments
                ).waitForExit(limit: 60)
            }
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("tokenet-shark: to read the capture \(capture), write -r \(capture) "))
            #expect(result.stdout.isEmpty)
        }
    }

    /// An empty capture, and a key log that holds no TLS secret, are said: tshark printed nothing for either and
    /// exited 0, as for a capture without Tokenet traffic.
    @Test func anEmptyCaptureOrAKeyLogWithoutSecretsIsSaid() async throws {
        let directory = try TemporaryDirectory()
        let empty = directory.path("empty.pcapng")
        try Data().write(to: URL(fileURLWithPath: empty))
        let capture = directory.path("capture.pcapng")
        try Data("not a capture".utf8).write(to: URL(fileURLWithPath: capture))
        let keylog = directory.path("keys.log")
        try Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: keylog))
        func shark(_ arguments: [String]) async throws -> ProcessResult {
            try await offThePool { () throws -> ProcessResult in
                try LaunchedProcess(
                    executable: URL(fileURLWithPath: PackageRoot.path("Tools/dissector/tokenet-shark")), arguments
                ).waitForExit(limit: 60)
            }
        }
        let emptyCapture = try await shark(["-r", empty])
        #expect(emptyCapture.status == 1, "\(emptyCapture.stderr)")
        #expect(
            emptyCapture.stderr == "tokenet-shark: the capture \(empty) is empty (0 bytes): nothing was written to it\n"
        )
        let noSecrets = try await shark(["--keylog", keylog, "-r", capture])
        #expect(
            noSecrets.stderr.hasPrefix(
                "tokenet-shark: the key log \(keylog) holds no TLS 1.3 secret (no CLIENT_TRAFFIC_SECRET_0 line)"),
            "\(noSecrets.stderr)")
    }

    @Test(.enabled(if: geteuid() == 0, "capturing on lo needs root"))
    func aLiveCaptureIsDecodedFrameByFrame() async throws {
        let result = try await offThePool { () throws -> ProcessResult in
            let directory = try BuiltExecutables.url(of: "tsp-node").deletingLastPathComponent().path
            // Niced: its nodes and its tshark runs take seconds of CPU, which the time-bound tests running beside
            // it need more. Niced on a machine loaded beyond the suite, it took more than 300 s, and with two more
            // processes spinning on the two CPUs, more than 600 s (it takes about 240 s in a full run).
            return try LaunchedProcess(
                executable: URL(fileURLWithPath: "/usr/bin/nice"),
                [
                    "-n", "15", "/usr/bin/python3", PackageRoot.path("Tools/dissector/check-dissector"),
                    "--bin", directory, "--pki", DevelopmentPKI.shared.directory.path,
                ]
            ).waitForExit(limit: 1_200)
        }
        let lines = result.stdout.split(separator: "\n")
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(lines.filter { $0.hasPrefix("ok ") }.count == 24, "\(result.stdout)")
        #expect(!lines.contains { $0.hasPrefix("FAIL") }, "\(result.stdout)")
    }
}
