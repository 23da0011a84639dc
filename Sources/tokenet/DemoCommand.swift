import Foundation
import TokenetNode

/// `tokenet demo`: starts the three nodes as separate processes, waits until each is ready, runs the
/// choreography, stops them with SIGTERM and reports how each exited.
struct DemoCommand {
    static let subcommand = Subcommand(
        name: "demo",
        summary:
            "Start the three nodes, run nine provisioning flows and the token lifecycle across them, then stop them.",
        help: DemoOptions.help,
        valuedOptions: DemoOptions.valuedFlags
    ) { arguments throws(CLIError) in
        try DemoCommand(options: DemoOptions(parsing: arguments)).run()
    }

    /// Start order. Every node gets every peer's reserved address up front; the issuer goes last because it registers
    /// with the TSP and may push to the wallet as soon as it runs.
    static let startOrder: [(role: NodeRole, spec: NodeSpec)] = [(.tsp, .tsp), (.wallet, .wallet), (.issuer, .issuer)]

    /// The issuer's cards, relative to the repository root.
    static let fixturePath = "Tools/fixtures/issuer.json"

    var options: DemoOptions
    let interruption = DemoInterruption()

    var sandbox: Sandbox { Sandbox(timeout: options.timeout, interruption: interruption) }

    func run() throws(CLIError) -> Int32 {
        PrivateFiles.fromNowOn()
        let binDirectory = RepositoryLocator.executableDirectory
        for (_, spec) in Self.startOrder {
            let path = binDirectory.appendingPathComponent(spec.name).path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw CLIError(
                    .setup, "\(spec.name) not found next to tokenet in \(binDirectory.path); run swift build")
            }
        }
        let workspace = try sandbox.makeWorkspace(prefix: "tokenet-demo")
        printOut("Tokenet demo")
        printOut("  workspace     \(workspace.path)")
        defer {
            if options.keepDirectory {
                printOut("Kept \(workspace.path) (node logs: */*.stderr.log)")
            } else {
                try? FileManager.default.removeItem(at: workspace)
            }
        }

        let pki = try sandbox.prepareCertificates(in: workspace)
        let fixture = RepositoryLocator.repositoryRoot?.appendingPathComponent(Self.fixturePath).path.nonEmptyFile
        var started: [RunningNode] = []
        var issuerLink: DemoIssuerLink?
        var failure: CLIError?
        do throws(CLIError) {
            // Said before any node starts: health alone is not the demo ("Demo OK" after it read as every flow having
            // run), and nodes started only to be stopped said nothing of what was missing until they had.
            if pki == nil || fixture == nil {
                let missing =
                    fixture == nil
                    ? "\(Self.fixturePath) was not found" : "Tools/gen-certs was not found, so there is no operator"
                throw CLIError(
                    .setup,
                    "the demo's flows need Tools/gen-certs (the operator's certificate) and \(Self.fixturePath) of "
                        + "the Tokenet checkout this tokenet was built from, and \(missing); run Tools/tokenet demo "
                        + "from the checkout")
            }
            var addresses: [NodeRole: HostPort] = [:]
            for (role, _) in Self.startOrder { addresses[role] = try PortReservation.freeLoopbackAddress() }
            // The TSP reaches the issuer through a fault proxy that one scenario steers.
            let link = try DemoIssuerLink.start(to: addresses[.issuer]!)
            issuerLink = link
            printOut("  fault proxy   \(link.address) (tsp-node -> issuer-node)")
            printOut("Starting nodes")
            for (role, spec) in Self.startOrder {
                let extra = role == .issuer ? fixture.map { ["--fixtures", $0] } ?? [] : []
                var peers = addresses
                if role == .tsp { peers[.issuer] = link.address }
                let (process, ready) = try sandbox.startNode(
                    role: role, spec: spec, pki: pki, workspace: workspace, addresses: peers,
                    extraArguments: extra)
                started.append(RunningNode(role: role, process: process, ready: ready))
                printOut("  ready \(spec.name) pid=\(ready.pid) listen=\(ready.listen)")
            }
            try interruption.check()
            let cluster = DemoCluster(
                nodes: started.map { ($0.role, $0.ready) }, pkiDirectory: pki?.path, workspace: workspace.path)
            var choreographies: [any DemoChoreography] = [HealthChoreography(pkiDirectory: cluster.pkiDirectory)]
            if let pkiDirectory = cluster.pkiDirectory, let fixture {
                choreographies.append(
                    try ProvisioningChoreography(
                        pkiDirectory: pkiDirectory, fixturePath: fixture, timeout: options.timeout,
                        interruption: interruption, issuerLink: issuerLink?.proxy))
                choreographies.append(
                    NotificationChoreography(
                        pkiDirectory: pkiDirectory, timeout: options.timeout, interruption: interruption))
            }
            for choreography in choreographies {
                printOut(choreography.title)
                try choreography.run(cluster: cluster, report: printOut)
                try interruption.check()
            }
        } catch {
            failure = error
        }

        let stoppedCleanly = sandbox.stop(started.map(\.process))
        issuerLink?.stop()
        if let failure {
            printError("tokenet demo failed: \(failure)")
            if !options.keepDirectory { printError("Rerun with --keep-dir to keep every node's logs.") }
            return 1
        }
        guard stoppedCleanly else {
            printError("tokenet demo failed: not every node stopped cleanly")
            return 1
        }
        printOut("Demo OK: \(started.count) nodes became ready, every step went as expected, and they stopped cleanly.")
        return 0
    }
}

/// A node the demo started and saw become ready.
struct RunningNode {
    var role: NodeRole
    var process: ChildProcess
    var ready: ReadyInfo
}

extension String {
    /// The path itself when a file is there, else nil: a checkout without the fixture is as good as none.
    fileprivate var nonEmptyFile: String? { FileManager.default.fileExists(atPath: self) ? self : nil }
}
