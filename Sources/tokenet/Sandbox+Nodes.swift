import Foundation
import TokenetNode

extension Sandbox {
    /// Starts one node on its reserved address, with the addresses of every peer it knows (running or not: a node
    /// reaches its peers lazily), and waits until it is ready.
    func startNode(
        role: NodeRole, spec: NodeSpec, pki: URL?, workspace: URL,
        addresses: [NodeRole: HostPort], extraArguments: [String] = [], logName: String? = nil,
        logLevel: String = "info"
    ) throws(CLIError) -> (ChildProcess, ReadyInfo) {
        let directory = workspace.appendingPathComponent(spec.name)
        let readyFile = directory.appendingPathComponent("ready.json")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw CLIError(.setup, "cannot create \(directory.path)", cause: DemoCause(error))
        }
        // A node killed with SIGKILL leaves its ready file behind; this start must not take it for its own.
        try? FileManager.default.removeItem(at: readyFile)
        if role == .wallet { try writeDemoWalletConfiguration(dataDirectory: directory.appendingPathComponent("data")) }
        var arguments = [
            "--listen", addresses[role].map { "\($0)" } ?? "127.0.0.1:0", "--data-dir",
            directory.appendingPathComponent("data").path,
            "--ready-file", readyFile.path, "--log-level", logLevel,
            // A launcher killed with SIGKILL cannot stop its nodes; they stop themselves once it has gone.
            "--parent-pid", "\(getpid())",
        ]
        if let pki {
            arguments += [
                "--cert", pki.appendingPathComponent("\(role.rawValue).pem").path,
                "--key", pki.appendingPathComponent("\(role.rawValue).key").path,
                "--ca", pki.appendingPathComponent("ca.pem").path,
            ]
        } else {
            arguments.append("--plaintext")
        }
        for peer in spec.knownPeers {
            if let address = addresses[peer] { arguments += ["--\(peer.rawValue)", "\(address)"] }
        }
        arguments += extraArguments

        let executable = RepositoryLocator.executableDirectory.appendingPathComponent(spec.name)
        // Its stop signals blocked from the start: the node takes them once its first line runs, and one that came
        // before (a Ctrl-C a few milliseconds after the launch) killed it half-started.
        let process = ChildProcess(
            name: spec.name, executable: executable, arguments: arguments, logDirectory: directory, logName: logName,
            blockedSignals: StopSignalWatcher.stopSignals)
        try process.launch()
        do {
            return (process, try waitUntilReady(process, readyFile: readyFile.path, spec: spec))
        } catch  where error.message.hasPrefix(DemoInterruption.messagePrefix) {
            // Stopped as a running node is (SIGTERM, killed only past the timeout): a node keeps a stop signal that
            // comes while it starts until it can act on it, and it may be migrating its database. Killed here, it
            // was cut short mid-start with nothing said, and the command still exited 0.
            guard stop([process]) else {
                throw CLIError(.node, "\(spec.name) did not stop cleanly when it was \(error.message) while starting")
            }
            throw error
        } catch {
            process.send(SIGKILL)
            _ = process.waitForExit(seconds: 5)
            throw error
        }
    }

    /// Waits for the ready file, checking on every tick that the node is still alive, and cross-checks it with the
    /// node's `READY` line on stdout.
    private func waitUntilReady(_ process: ChildProcess, readyFile: String, spec: NodeSpec) throws(CLIError)
        -> ReadyInfo
    {
        let deadline = Date().addingTimeInterval(timeout)
        while !FileManager.default.fileExists(atPath: readyFile) {
            try interruption.check()
            // Waiting on the exit doubles as the polling interval and notices a crash at once.
            if process.waitForExit(seconds: 0.05) {
                // It may have written its ready file just before it ended: said so, as its log shows it ready.
                let when =
                    FileManager.default.fileExists(atPath: readyFile)
                    ? "right after it reported ready" : "before becoming ready"
                throw CLIError(.node, "\(spec.name) \(process.outcome) \(when)\n\(process.stderrTail())")
            }
            if Date() > deadline {
                throw CLIError(
                    .node, "\(spec.name) did not become ready within \(timeout) s\n\(process.stderrTail())")
            }
        }
        let ready: ReadyInfo
        do {
            ready = try ReadyFile.read(from: readyFile)
        } catch {
            throw CLIError(.node, "\(spec.name) wrote an unreadable ready file", cause: DemoCause(error))
        }
        let stdout = (try? String(contentsOf: process.stdoutURL, encoding: .utf8)) ?? ""
        let announced = stdout.split(separator: "\n").compactMap { ReadyInfo(line: String($0)) }.first
        guard ready.node == spec.name, ready.pid == process.pid, announced == ready else {
            throw CLIError(
                .node,
                "\(spec.name) announced inconsistent readiness: file \(ready), stdout \(announced?.line ?? "no READY line"), pid \(process.pid)"
            )
        }
        return ready
    }
}

extension Sandbox {
    /// The demo wallet reports an account risk score of 3: cards with a fixed rule do not look at it, and the
    /// fixture's by-score card (approve up to 2, step-up up to 4) then asks for ID&V, which the demo completes
    /// through the issuer's call centre. An existing file (a rerun in the same workspace) is left alone.
    func writeDemoWalletConfiguration(dataDirectory: URL) throws(CLIError) {
        let file = dataDirectory.appendingPathComponent("wallet.json")
        guard !FileManager.default.fileExists(atPath: file.path) else { return }
        do {
            // The wallet's own, as a data directory the node makes is (0700) and the TSP's and the issuer's were:
            // made here first, it was 0755 with a world-readable configuration.
            try FileManager.default.createDirectory(
                at: dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try Data(#"{"risk": {"accountScore": 3, "deviceScore": 1}}"#.utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        } catch {
            throw CLIError(.setup, "cannot write \(file.path)", cause: DemoCause(error))
        }
    }
}
