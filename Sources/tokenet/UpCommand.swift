import Foundation
import TokenetNode
import TokenetScenario
import TokenetTransport

/// `tokenet up`: starts the three nodes (as a scenario's sandbox: fixture issuer, fault proxies on every link) and
/// keeps them running for people to work with: the CLI from another terminal, or scenario steps typed here.
struct UpCommand {
    static let subcommand = Subcommand(
        name: "up",
        summary:
            "Start the three nodes and keep them running; type scenario steps (calls, faults, restarts) to steer them.",
        help: help,
        valuedOptions: valuedFlags
    ) { arguments throws(CLIError) in
        try UpCommand(parsing: arguments).run()
    }

    static let help = """
        Usage: tokenet up [--dir DIR] [--host ADDRESS] [--base-port N] [--timeout SECONDS]

        Starts tsp-node, issuer-node (with the cards of Tools/fixtures/issuer.json) and wallet-node on loopback
        ports (or where --host and --base-port say) over mutual TLS, every connection between them through a
        fault proxy, as tokenet scenario does, and keeps them running until SIGINT (Ctrl-C), SIGTERM or SIGHUP
        (its terminal closed), then stops them cleanly. It prints each node's address and the environment for
        the CLI (TOKENET_CACERT, TOKENET_CERT, TOKENET_KEY as the operator; also written to DIR/sandbox.env), so
        that tokenet call, wallet, issuer and tsp work from another terminal.

        Standard input takes scenario steps, one per line, run as they come (tokenet scenario --help lists them):
        a call shows its status and every response; expect checks the call before it and save keeps a field of
        its response; fault, stop, kill, start, pause and resume steer the links and nodes. A step that fails says
        why and the console goes on. End of input leaves the nodes running.

        Options:
          --dir DIR            Keep everything in DIR (certificates, each node's data and logs) and use it again
                               next time: the nodes start with the tokens and cards they had. Without it, a
                               temporary directory is removed at exit.
          --host ADDRESS       The IP address the nodes listen on (default 127.0.0.1). 0.0.0.0, or :: for IPv6
                               and IPv4, takes connections on every interface, from parties on other machines
                               or containers; the CLI and the fault proxies still reach the nodes on loopback.
          --base-port N        tsp-node listens on port N, issuer-node on N+1 and wallet-node on N+2, so that
                               parties of your own find them at the same addresses every run, and the fault
                               proxies on N+3 to N+7 of 127.0.0.1 (tsp->issuer, issuer->tsp, issuer->wallet,
                               wallet->tsp, wallet->issuer); default: free ports chosen at random.
          --timeout SECONDS    Longest wait for a node to start, register or stop (default 30).
          --help               Show this help.

        Exit status: 0 when stopped by a signal with every node exiting cleanly; 1 when a node cannot start or
        does not stop cleanly, or a port of --base-port is taken; 2 for bad options.
        """

    var directory: String?
    var timeout = 30.0
    var placement = NodePlacement()

    /// The options that take a value (`ArgumentScanner`).
    static let valuedFlags: Set<String> = ["--dir", "--timeout", "--host", "--base-port"]

    init(parsing arguments: [String]) throws(CLIError) {
        var scanner = ArgumentScanner(arguments, command: "up", valued: Self.valuedFlags)
        while let item = try scanner.next() {
            switch item {
            case .valued("--dir", let text):
                guard !text.isEmpty else { throw CLIError(.usage, "up: --dir needs DIR") }
                directory = text
            case .valued("--timeout", let text): timeout = try Sandbox.timeout(text, command: "up")
            case .valued("--host", let text): placement.host = try Self.host(text)
            case .valued("--base-port", let text): placement.basePort = try Self.basePort(text)
            case .valued(let flag, _), .flag(let flag, _):
                let hint = ArgumentScanner.singleDashHint(flag, options: Self.valuedFlags)
                throw CLIError(.usage, "up: unknown option '\(flag)'\(hint)")
            case .endOfOptions: continue
            case .operand(let operand): throw CLIError(.usage, "up: unexpected argument '\(operand)'")
            }
        }
    }

    /// `--host`: an IP address (an IPv6 one with or without brackets) or localhost, as a node's `--listen` takes.
    static func host(_ text: String) throws(CLIError) -> String {
        var host = text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { host = "127.0.0.1" }
        guard !host.isEmpty, HostPort(host: host, port: 0).hostIsIPOrLocalhost else {
            throw CLIError(
                .usage,
                "up: --host: expected an IP address such as 127.0.0.1, 0.0.0.0 (every interface) or :: (IPv6 and "
                    + "IPv4), got '\(maskPAN(text))'")
        }
        // Another machine's address, named as an option before any certificate is made.
        do {
            try PortReservation.requireLocal(host)
        } catch {
            throw CLIError(.usage, "up: --host: \(error.message)")
        }
        return host
    }

    /// `--base-port`: the first of eight ports in a row (three nodes, five proxies).
    static func basePort(_ text: String) throws(CLIError) -> UInt16 {
        let last = 65536 - NodePlacement.portCount
        guard text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(text), (1...last).contains(port) else {
            throw CLIError(
                .usage,
                "up: --base-port: expected a port from 1 to \(last) (the nodes take N, N+1 and N+2, the fault "
                    + "proxies N+3 to N+7), got '\(maskPAN(text))'")
        }
        return UInt16(port)
    }

    func run() throws(CLIError) -> Int32 {
        PrivateFiles.fromNowOn()
        for (_, spec) in DemoCommand.startOrder {
            let path = RepositoryLocator.executableDirectory.appendingPathComponent(spec.name).path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw CLIError(
                    .setup,
                    "\(spec.name) not found next to tokenet in \(RepositoryLocator.executableDirectory.path); run swift "
                        + "build")
            }
        }
        // Found before anything is made: away from the repository, --dir was left holding an up.lock.
        let fixture = try RepositoryLocator.issuerFixture(for: "up")
        let sandbox = Sandbox(timeout: timeout, interruption: DemoInterruption())
        let workspace = try workspace(sandbox)
        // Two consoles on one directory would regenerate each other's certificates and replace each other's logs
        // and ready files before their nodes refused the shared data; the second is refused before all that.
        let lock: DataDirectoryLock
        do {
            lock = try DataDirectoryLock(
                directory: workspace.path, fileName: "up.lock", flag: "up: --dir", owner: "tokenet up")
        } catch {
            throw CLIError(error.code == .config ? .usage : .setup, error.message)
        }
        defer { lock.release() }
        defer { if directory == nil { try? FileManager.default.removeItem(at: workspace) } }
        printOut("Tokenet sandbox")
        printOut("  workspace     \(workspace.path)\(directory == nil ? " (removed at exit; --dir keeps one)" : "")")
        let pki = try certificates(in: workspace, sandbox)
        let nodes = try ScenarioNodes(
            sandbox: sandbox, workspace: workspace, pki: pki, fixture: fixture, placement: placement)
        var failure: CLIError?
        do {
            try nodes.startAll { printOut("  \($0)") }
            try announce(nodes, workspace: workspace)
            try Console(
                runner: ScenarioRunner(scenario: Scenario(source: "up", steps: []), nodes: nodes, verbose: true)
            )
            .run()
        } catch {
            failure = error
        }
        let clean = nodes.stopAll()
        if let failure, !failure.message.hasPrefix(DemoInterruption.messagePrefix) {
            printError("tokenet up: \(failure)")
            return 1
        }
        return clean ? 0 : 1
    }

    /// DIR (created when missing), or a fresh temporary directory.
    private func workspace(_ sandbox: Sandbox) throws(CLIError) -> URL {
        guard let directory else { return try sandbox.makeWorkspace(prefix: "tokenet-up") }
        let url = URL(fileURLWithPath: directory).standardizedFileURL
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw CLIError(.usage, "up: --dir \(directory) is a file, not a directory")
        }
        try Self.makeDirectory(url.path) { reason throws(CLIError) in
            throw CLIError(.usage, "up: cannot create --dir \(directory): \(reason)")
        }
        return url
    }

    /// Creates `path` (absolute) and its missing parents, as `mkdir -p` does, and hands `failure` the system's reason
    /// when it cannot. FileManager's error described itself as the whole NSError ("The operation could not be
    /// completed. (NSCocoaErrorDomain error 512.)" for a parent that is a file), which said nothing of the cause.
    static func makeDirectory(_ path: String, failure: (String) throws(CLIError) -> Void) throws(CLIError) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/\(component)"
            if mkdir(prefix, 0o755) != 0, errno != EEXIST {
                try failure(String(cString: strerror(errno)))
                return
            }
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            try failure(String(cString: strerror(ENOTDIR)))
            return
        }
    }

    /// The certificates DIR already holds from an earlier run, or new ones.
    private func certificates(in workspace: URL, _ sandbox: Sandbox) throws(CLIError) -> URL {
        let pki = workspace.appendingPathComponent("pki")
        let files = ["ca.pem", "operator.pem", "operator.key", "tsp.pem", "issuer.pem", "wallet.pem"]
        if files.allSatisfy({ FileManager.default.fileExists(atPath: pki.appendingPathComponent($0).path) }) {
            // The console's calls present the operator's key: one that others can read would fail each of them.
            let key = pki.appendingPathComponent("operator.key").path
            if let problem = TLSFileCheck.problem(with: key, holding: .privateKey) {
                throw CLIError(.setup, "up: the operator's key \(key) \(problem)")
            }
            printOut("  certificates  \(pki.path) (from an earlier run)")
            return pki
        }
        guard let generated = try sandbox.prepareCertificates(in: workspace) else {
            throw CLIError(.setup, "up: the nodes need the development PKI, and Tools/gen-certs was not found")
        }
        return generated
    }

    /// Prints where everything is and writes DIR/sandbox.env.
    private func announce(_ nodes: ScenarioNodes, workspace: URL) throws(CLIError) {
        printOut("  \(nodes.faultProxies)")

        let pki = nodes.pki.path
        var environment = [
            "TOKENET_CACERT=\(pki)/ca.pem", "TOKENET_CERT=\(pki)/operator.pem", "TOKENET_KEY=\(pki)/operator.key",
        ]
        for party in ScenarioParty.allCases {
            environment.append("TOKENET_\(party.rawValue.uppercased())=\(nodes.listen[party]!)")
        }
        let file = workspace.appendingPathComponent("sandbox.env")
        do {
            try Data((environment.map { "export \($0)" }.joined(separator: "\n") + "\n").utf8).write(to: file)
        } catch {
            throw CLIError(.setup, "up: cannot write \(file.path)", cause: DemoCause(error))
        }
        printOut("For the CLI in another terminal (also in \(file.path)):")
        printOut("  export \(environment.prefix(3).joined(separator: " "))")
        printOut("  tokenet call \(nodes.listen[.tsp]!) tokenet.tsp.v1.TspControl/ListTokens")
        printOut("Type scenario steps here, one per line (tokenet scenario --help); Ctrl-C stops the nodes.")
    }
}
