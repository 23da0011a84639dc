import Foundation
import TokenetNode

/// `tokenet demo`: starts the three nodes as separate processes, waits until each is ready, runs the
/// choreography, stops them with SIGTERM and reports how each exited.
struct DemoCommand {
    static let subcommand = Subcommand(
        name: "demo",
        summary: "Start tsp-node, issuer-node and wallet-node, check they are ready, then stop them.",
        help: DemoOptions.help
    ) { arguments throws(CLIError) in
        try DemoCommand(options: DemoOptions(parsing: arguments)).run()
    }

    /// Start order. Each node is given the addresses of the already-running nodes it knows, so the TSP goes first.
    static let startOrder: [(role: PeerRole, spec: NodeSpec)] = [(.tsp, .tsp), (.issuer, .issuer), (.wallet, .wallet)]

    var options: DemoOptions
    var choreography: any DemoChoreography = ReadinessChoreography()
    let interruption = DemoInterruption()

    func run() throws(CLIError) -> Int32 {
        let binDirectory = RepositoryLocator.executableDirectory
        for (_, spec) in Self.startOrder {
            let path = binDirectory.appendingPathComponent(spec.name).path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw CLIError(
                    .setup, "\(spec.name) not found next to tokenet in \(binDirectory.path); run swift build")
            }
        }
        let workspace = try makeWorkspace()
        printOut("Tokenet demo")
        printOut("  workspace     \(workspace.path)")
        defer {
            if options.keepDirectory {
                printOut("Kept \(workspace.path) (node logs: */*.stderr.log)")
            } else {
                try? FileManager.default.removeItem(at: workspace)
            }
        }

        let pki = try prepareCertificates(in: workspace)
        var started: [(role: PeerRole, process: ChildProcess, ready: ReadyInfo)] = []
        var failure: CLIError?
        do {
            printOut("Starting nodes")
            for (role, spec) in Self.startOrder {
                let (process, ready) = try startNode(
                    role: role, spec: spec, pki: pki, workspace: workspace, running: started)
                started.append((role, process, ready))
                printOut("  ready \(spec.name) pid=\(ready.pid) listen=\(ready.listen)")
            }
            try interruption.check()
            let cluster = DemoCluster(
                nodes: started.map { ($0.role, $0.ready) }, pkiDirectory: pki?.path, workspace: workspace.path)
            printOut(choreography.title)
            try choreography.run(cluster: cluster, report: printOut)
            try interruption.check()
        } catch {
            failure = error
        }

        let stoppedCleanly = stop(started.map(\.process))
        if let failure {
            printError("tokenet demo failed: \(failure)")
            if !options.keepDirectory { printError("Rerun with --keep-dir to keep every node's logs.") }
            return 1
        }
        guard stoppedCleanly else {
            printError("tokenet demo failed: not every node stopped cleanly")
            return 1
        }
        printOut("Demo OK: \(started.count) nodes became ready and stopped cleanly.")
        return 0
    }

    /// A fresh private directory under $TMPDIR.
    private func makeWorkspace() throws(CLIError) -> URL {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/tokenet-demo.XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw CLIError(
                .setup, "cannot create a temporary directory under \(base)",
                cause: DemoCause(String(cString: strerror(errno))))
        }
        return URL(fileURLWithPath: String(cString: created))
    }

    /// Runs Tools/gen-certs when the repository has it; nil means the nodes run with --plaintext.
    private func prepareCertificates(in workspace: URL) throws(CLIError) -> URL? {
        guard let root = RepositoryLocator.repositoryRoot else {
            printOut("  certificates  repository not found, so no Tools/gen-certs: nodes run with --plaintext")
            return nil
        }
        let script = root.appendingPathComponent("Tools/gen-certs")
        guard FileManager.default.fileExists(atPath: script.path) else {
            printOut("  certificates  Tools/gen-certs not present yet: nodes run with --plaintext (no TLS)")
            return nil
        }
        let pki = workspace.appendingPathComponent("pki")
        let generator = ChildProcess(
            name: "gen-certs", executable: script, arguments: [pki.path], logDirectory: workspace)
        try generator.launch()
        guard generator.waitForExit(seconds: options.timeout) else {
            generator.send(SIGKILL)
            _ = generator.waitForExit(seconds: 5)
            throw CLIError(.setup, "Tools/gen-certs did not finish within \(options.timeout) s")
        }
        guard generator.exitedCleanly else {
            throw CLIError(.setup, "Tools/gen-certs \(generator.outcome)\n\(generator.stderrTail())")
        }
        let expected = ["ca.pem"] + Self.startOrder.flatMap { ["\($0.role.rawValue).pem", "\($0.role.rawValue).key"] }
        for file in expected where !FileManager.default.fileExists(atPath: pki.appendingPathComponent(file).path) {
            throw CLIError(.setup, "Tools/gen-certs did not create \(pki.appendingPathComponent(file).path)")
        }
        printOut("  certificates  generated by Tools/gen-certs in \(pki.path)")
        return pki
    }

    private func startNode(
        role: PeerRole, spec: NodeSpec, pki: URL?, workspace: URL,
        running: [(role: PeerRole, process: ChildProcess, ready: ReadyInfo)]
    ) throws(CLIError) -> (ChildProcess, ReadyInfo) {
        let directory = workspace.appendingPathComponent(spec.name)
        let readyFile = directory.appendingPathComponent("ready.json")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw CLIError(.setup, "cannot create \(directory.path)", cause: DemoCause(error))
        }
        var arguments = [
            "--listen", "127.0.0.1:0", "--data-dir", directory.appendingPathComponent("data").path,
            "--ready-file", readyFile.path, "--log-level", "info",
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
        for peer in running where spec.knownPeers.contains(peer.role) {
            arguments += ["--\(peer.role.rawValue)", peer.ready.listen]
        }

        let executable = RepositoryLocator.executableDirectory.appendingPathComponent(spec.name)
        let process = ChildProcess(
            name: spec.name, executable: executable, arguments: arguments, logDirectory: directory)
        try process.launch()
        do {
            return (process, try waitUntilReady(process, readyFile: readyFile.path, spec: spec))
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
        let deadline = Date().addingTimeInterval(options.timeout)
        while !FileManager.default.fileExists(atPath: readyFile) {
            try interruption.check()
            // Waiting on the exit doubles as the polling interval and notices a crash at once.
            if process.waitForExit(seconds: 0.05) {
                throw CLIError(.node, "\(spec.name) \(process.outcome) before becoming ready\n\(process.stderrTail())")
            }
            if Date() > deadline {
                throw CLIError(
                    .node, "\(spec.name) did not become ready within \(options.timeout) s\n\(process.stderrTail())")
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

    /// Sends SIGTERM to every node, waits for each (killing any that outlive the timeout) and reports exits.
    private func stop(_ processes: [ChildProcess]) -> Bool {
        guard !processes.isEmpty else { return true }
        printOut("Stopping nodes (SIGTERM)")
        for process in processes { process.send(SIGTERM) }
        var allClean = true
        for process in processes {
            if !process.waitForExit(seconds: options.timeout) {
                process.send(SIGKILL)
                _ = process.waitForExit(seconds: 5)
                printOut("  \(process.name) pid=\(process.pid) did not stop within \(options.timeout) s and was killed")
                allClean = false
                continue
            }
            printOut("  \(process.name) pid=\(process.pid) \(process.outcome)")
            if !process.exitedCleanly {
                allClean = false
                printOut(process.stderrTail())
            }
        }
        return allClean
    }
}
