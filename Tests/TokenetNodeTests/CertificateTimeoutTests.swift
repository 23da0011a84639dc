import Foundation
import Testing
import TokenetTestSupport

/// A sandbox whose certificates take longer than `--timeout`.
@Suite struct CertificateTimeoutTests {
    /// Tools/gen-certs was killed with SIGKILL, which left its temporary directory, holding the private keys made so
    /// far, in $TMPDIR at every timeout.
    @Test func aTimedOutGenCertsLeavesNoKeysBehind() async throws {
        let directory = try TemporaryDirectory()
        let temporary = directory.path("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let script = directory.path("ok.scenario")
        try "echo hi\n".write(toFile: script, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporary
        var timedOut = 0
        for _ in 0..<3 {
            let result = try await runTokenet(
                ["scenario", script, "--timeout", "0.02"], environment: environment)
            if result.stderr.contains("Tools/gen-certs did not finish within 0.02 s") { timedOut += 1 }
        }
        #expect(timedOut > 0, "gen-certs always finished within 0.02 s here: nothing was checked")
        let left = try FileManager.default.contentsOfDirectory(atPath: temporary)
        #expect(left == [], "\(left)")
    }
}
