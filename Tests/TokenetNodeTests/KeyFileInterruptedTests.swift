import Foundation
import Testing
import TokenetTestSupport

/// A node stopped while it writes its keys at first start (a full disk, a kill) left a key file holding part of a
/// key, often 0 bytes, and refused every later start on it ("the vault key file … holds 0 bytes"). Key files are now
/// written beside their place and moved in whole.
@Suite struct KeyFileInterruptedTests {
    @Test(.timeLimit(.minutes(3))) func aNodeStoppedWhileWritingItsKeysStartsAgain() async throws {
        let scratch = try TemporaryDirectory()
        let node = try BuiltExecutables.url(of: "tsp-node").path
        let data = scratch.path("data")
        // A file size limit of 1 KiB: the node stops (SIGXFSZ) while it writes its card key, a PEM of about
        // 1.7 KB, as a disk that fills up stops the write.
        let stopped = try await offThePool {
            try LaunchedProcess(
                executable: URL(fileURLWithPath: "/bin/bash"),
                [
                    "-c", #"ulimit -f 1; exec "$0" "$@""#, node, "--plaintext", "--listen", "127.0.0.1:0",
                    "--data-dir", data,
                ]
            ).waitForExit(limit: 60) as ProcessResult
        }
        #expect(stopped.status != 0, "\(stopped.stderr)")
        let keys = scratch.path("data/keys")
        let names = try FileManager.default.contentsOfDirectory(atPath: keys)
        #expect(!names.contains("card-key-current.pem"), "a part of the card key in place: \(names)")

        let (started, _, _) = try await LaunchedProcess.plaintextTSPNode(in: scratch)
        started.process.send(SIGTERM)
        let result = try await started.waitForExit()
        #expect(result.status == 0, "\(result.stderr)")
        // The part the stopped node left is gone: it held part of a private key.
        #expect(try FileManager.default.contentsOfDirectory(atPath: keys).allSatisfy { !$0.contains(".tmp.") })
    }
}
