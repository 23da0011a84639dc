import Foundation
import Glibc
import Testing
import TokenetTestSupport
import TokenetTransport

@testable import TokenetNode

/// A command the node stops hearing from (suspended with Ctrl-Z, say) is cut off by the node's keepalive; the CLI
/// says that the node closed the connection for this command's silence. It said that the node had stopped
/// answering, "nothing heard for 20 s", after 4 s, of a node that had been up throughout.
@Suite(.timeLimit(.minutes(3))) struct SuspendedCommandTests {
    @Test func aCommandCutOffForItsOwnSilenceIsToldSo() async throws {
        let result = try await offThePool { () throws -> ProcessResult in
            let data = try TemporaryDirectory()
            let readyFile = data.path("ready.json")
            let node = try LaunchedProcess.tspNode(in: data, ["--keepalive", "0.5", "--keepalive-timeout", "0.5"])
            defer { PythonClientInteropTests.stop(node.process) }
            let address = try PythonClientInteropTests.waitFor(node.process, "tsp-node's ready file") {
                FileManager.default.fileExists(atPath: readyFile) ? try ReadyFile.read(from: readyFile).listen : nil
            }
            let pki = DevelopmentPKI.shared
            let watch = try LaunchedProcess(
                "tokenet",
                [
                    "call", address, "tokenet.health.v1.Health/Watch", "-d", "{}", "--cacert", pki.path("ca.pem"),
                    "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
                ])
            _ = try PythonClientInteropTests.waitFor(watch.process, "the Watch's first answer") {
                let shown = (try? String(contentsOfFile: watch.directory.path("stdout"), encoding: .utf8)) ?? ""
                return shown.contains("SERVING") ? true : nil
            }
            watch.process.send(SIGSTOP)
            // Until the node has cut it off: its log says so.
            _ = try PythonClientInteropTests.waitFor(node.process, "the node's keepalive to end the connection") {
                let log = (try? String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8)) ?? ""
                return log.contains("no answer to keepalive ping") ? true : nil
            }
            watch.process.send(SIGCONT)
            return try watch.waitForExit(limit: 60)
        }
        #expect(result.status == 78, "\(result)")
        #expect(
            result.stderr.contains(
                "closed the connection: this command did not answer its keepalive ping in time (was the command "
                    + "stopped, with Ctrl-Z say, or the network to the node down?)"), "\(result.stderr)")
        #expect(!result.stderr.contains("stopped answering"), "\(result.stderr)")
    }
}
