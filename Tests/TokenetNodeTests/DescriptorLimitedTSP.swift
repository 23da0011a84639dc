import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

@testable import TokenetNode

/// A real tsp-node with only 64 file descriptors (`prlimit`), for the tests of what a node does when peers hold
/// them: few enough that a test's connections can take every one.
struct DescriptorLimitedTSP {
    let node: LaunchedProcess
    let address: HostPort

    /// A client's TLS context with the development PKI's certificate of `name` (`wallet`, `operator`).
    static func clientContext(_ name: String) throws -> TLSContext {
        let pki = DevelopmentPKI.shared
        return try TLSContext(
            configuration: .client(
                certificateChainFile: pki.path("\(name).pem"), privateKeyFile: pki.path("\(name).key"),
                trustedCAFile: pki.path("ca.pem")))
    }

    /// Starts the node in `scratch` with `arguments` added, and waits until it is ready. The caller stops it
    /// (`stop()`), also when the test fails.
    static func start(in scratch: TemporaryDirectory, _ arguments: [String] = []) async throws -> DescriptorLimitedTSP {
        let pki = DevelopmentPKI.shared
        let readyFile = scratch.path("ready.json")
        let node = try LaunchedProcess(
            executable: URL(fileURLWithPath: "/usr/bin/prlimit"),
            [
                "--nofile=64:64", try BuiltExecutables.url(of: "tsp-node").path, "--listen", "127.0.0.1:0",
                "--data-dir", scratch.path("data"), "--ready-file", readyFile, "--cert", pki.path("tsp.pem"),
                "--key", pki.path("tsp.key"), "--ca", pki.path("ca.pem"), "--parent-pid", "\(getpid())",
            ] + arguments)
        var ready: ReadyInfo?
        for _ in 0..<9000 where node.process.isRunning {
            if FileManager.default.fileExists(atPath: readyFile) {
                ready = try ReadyFile.read(from: readyFile)
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        guard let listen = ready?.listen, let address = HostPort(parsing: listen) else {
            node.process.send(SIGTERM)
            throw NotReady(stderr: (try? String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8)) ?? "")
        }
        return DescriptorLimitedTSP(node: node, address: address)
    }

    struct NotReady: Error, CustomStringConvertible {
        var stderr: String
        var description: String { "the tsp-node did not become ready; its stderr:\n\(stderr)" }
    }

    func stop() {
        node.process.send(SIGTERM)
    }
}
