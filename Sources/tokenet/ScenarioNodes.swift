import Foundation
import TokenetNode
import TokenetScenario

/// Where a sandbox's nodes listen: on which address, and on which ports.
struct NodePlacement: Sendable, Equatable {
    /// The IP address every node binds: 127.0.0.1 unless told otherwise; 0.0.0.0 or `::` for every interface.
    var host = "127.0.0.1"
    /// tsp-node's port, the issuer's the next and the wallet's the one after, and the fault proxies' the five after
    /// those (`proxyPorts`); free ports chosen at random when nil.
    var basePort: UInt16?

    /// How many ports from `basePort` on the sandbox takes: three nodes and a proxy per link.
    static let portCount = order.count + ScenarioLink.all.count

    static let order: [ScenarioParty] = [.tsp, .issuer, .wallet]

    /// The address to connect to a node bound to `host`: a wildcard address (every interface) is reached on this
    /// machine at the loopback address of its family.
    var connectHost: String {
        switch host {
        case "0.0.0.0": return "127.0.0.1"
        case "::": return "::1"
        default: return host
        }
    }
}

/// The three nodes of a scenario's sandbox: each listens on an address reserved for the whole run, so that a node
/// started again after `stop` or `kill` is found where its peers and the script expect it, with its data.
final class ScenarioNodes {
    let sandbox: Sandbox
    let workspace: URL
    let pki: URL
    let links: ScenarioLinks
    /// "fault proxies tsp->issuer 127.0.0.1:41435, …": where each link's proxy listens, the address a node's own
    /// messages name when it calls a peer.
    var faultProxies: String {
        var links: [String] = []
        for link in ScenarioLink.all {
            if let address = self.links.address(link) { links.append("\(link) \(address)") }
        }
        return "fault proxies \(links.joined(separator: ", "))"
    }

    /// Where each node is reached from this machine (by the fault proxies, the CLI and the console).
    let listen: [ScenarioParty: HostPort]
    /// What each node binds (`--listen`): `listen`, or the same port on every interface.
    let bound: [ScenarioParty: HostPort]
    private let fixture: String
    private(set) var running: [ScenarioParty: ChildProcess] = [:]
    private var launches: [ScenarioParty: Int] = [:]
    /// The nodes (by pid) whose end `endedNotByAStep` has said.
    private var announcedEnds: Set<Int32> = []
    /// Nodes a `pause` froze: they are resumed before they are stopped, or SIGTERM would wait for nothing.
    private var paused: Set<ScenarioParty> = []

    init(
        sandbox: Sandbox, workspace: URL, pki: URL, fixture: String, placement: NodePlacement = NodePlacement()
    ) throws(CLIError) {
        self.sandbox = sandbox
        self.workspace = workspace
        self.pki = pki
        self.fixture = fixture
        var bound: [ScenarioParty: HostPort] = [:]
        for (index, party) in NodePlacement.order.enumerated() {
            if let base = placement.basePort {
                let address = HostPort(host: placement.host, port: base + UInt16(index))
                if let reason = PortReservation.unavailable(address.host, address.port) {
                    throw CLIError(
                        .setup,
                        "\(party.role.nodeName) cannot have port \(address.port) (\(reason)); stop what holds it, "
                            + "or choose another --base-port or --host")
                }
                bound[party] = address
            } else {
                bound[party] = try PortReservation.freeAddress(on: placement.host)
            }
        }
        self.bound = bound
        listen = bound.mapValues { HostPort(host: placement.connectHost, port: $0.port) }
        let firstProxyPort = placement.basePort.map { $0 + UInt16(NodePlacement.order.count) }
        if let firstProxyPort {
            for (index, link) in ScenarioLink.all.enumerated() {
                let port = firstProxyPort + UInt16(index)
                if let reason = PortReservation.unavailable("127.0.0.1", port) {
                    throw CLIError(
                        .setup,
                        "the fault proxy for \(link) cannot have port \(port) on 127.0.0.1 (\(reason)); stop what "
                            + "holds it, or choose another --base-port")
                }
            }
        }
        links = try ScenarioLinks.start(to: listen, firstPort: firstProxyPort)
    }

    /// Starts every node in the demo's order (the issuer last: it registers with the TSP and may push to the wallet
    /// as soon as it runs), each pointed at its peers through the links' proxies.
    func startAll(report: (String) -> Void) throws(CLIError) {
        for (role, _) in DemoCommand.startOrder { try start(ScenarioParty(role), report: report) }
    }

    /// Starts `party` (again), and waits until it is ready and, for the issuer with the TSP running, registered.
    func start(_ party: ScenarioParty, report: (String) -> Void) throws(CLIError) {
        let role = party.role
        let spec = DemoCommand.startOrder.first { $0.role == role }!.spec
        var addresses: [NodeRole: HostPort] = [role: bound[party]!]
        for link in ScenarioLink.all where link.from == party {
            addresses[link.to.role] = links.address(link)
        }
        /// The logs of the node's `launch`th start: `tsp-node.stderr.log`, then `tsp-node.2.stderr.log`, …
        func logName(_ launch: Int) -> String { launch == 1 ? spec.name : "\(spec.name).\(launch)" }
        var launch = (launches[party] ?? 0) + 1
        // A sandbox started again in the same directory (`tokenet up --dir`) keeps the earlier sessions' logs:
        // each start takes the next number whose log is not there yet, where it wrote over them from the first.
        let logs = workspace.appendingPathComponent(spec.name)
        while FileManager.default.fileExists(atPath: logs.appendingPathComponent("\(logName(launch)).stderr.log").path)
        {
            launch += 1
        }
        launches[party] = launch
        let extra = role == .issuer ? ["--fixtures", fixture] : []
        let (process, ready) = try sandbox.startNode(
            role: role, spec: spec, pki: pki, workspace: workspace, addresses: addresses, extraArguments: extra,
            logName: logName(launch), logLevel: "debug")
        running[party] = process
        report("ready \(spec.name) pid=\(ready.pid) listen=\(ready.listen)")
        // Registration needs the TSP; an issuer started while the TSP is down registers once it is back.
        // A TSP that ended not by a step (killed from outside) is down, as for `up`: nothing to register with.
        if party == .issuer, up.contains(.tsp) { try waitForRegistration(process) }
    }

    /// The nodes running now: started, and not ended since (stopped, killed, or on their own).
    var up: Set<ScenarioParty> {
        Set(running.filter { !$0.value.hasExited }.keys)
    }

    /// SIGTERM; the node must drain and exit 0 within the timeout (or it is killed and the step fails).
    func stop(_ party: ScenarioParty) throws(CLIError) -> String {
        let process = try take(party)
        process.send(SIGTERM)
        guard process.waitForExit(seconds: sandbox.timeout) else {
            process.send(SIGKILL)
            _ = process.waitForExit(seconds: 5)
            throw CLIError(.node, "\(process.name) did not stop within \(sandbox.timeout) s of SIGTERM and was killed")
        }
        guard process.exitedCleanly else {
            throw CLIError(.node, "\(process.name) \(process.outcome) after SIGTERM\n\(process.stderrTail())")
        }
        return "\(process.name) pid=\(process.pid) \(process.outcome)"
    }

    /// SIGKILL, as a crash or a lost machine: no drain, no goaway, no close_notify.
    func kill(_ party: ScenarioParty) throws(CLIError) -> String {
        let process = try take(party)
        paused.remove(party)
        process.send(SIGKILL)
        guard process.waitForExit(seconds: sandbox.timeout) else {
            throw CLIError(.node, "\(process.name) pid=\(process.pid) did not end after SIGKILL")
        }
        return "\(process.name) pid=\(process.pid) \(process.outcome)"
    }

    /// SIGSTOP or SIGCONT.
    func signal(_ party: ScenarioParty, _ number: Int32) throws(CLIError) -> String {
        guard let process = running[party], !process.hasExited else {
            throw CLIError(.node, "\(party.role.nodeName) is not running")
        }
        process.send(number)
        // The next step must find the node frozen, not still answering with the threads that had yet to stop.
        if number == SIGSTOP && !process.waitUntilStopped(seconds: sandbox.timeout) {
            throw CLIError(
                .node, "\(process.name) pid=\(process.pid) did not stop within \(sandbox.timeout) s of SIGSTOP")
        }
        if number == SIGSTOP { paused.insert(party) } else { paused.remove(party) }
        return "\(process.name) pid=\(process.pid) \(number == SIGSTOP ? "paused (SIGSTOP)" : "resumed (SIGCONT)")"
    }

    private func take(_ party: ScenarioParty) throws(CLIError) -> ChildProcess {
        guard let process = running.removeValue(forKey: party) else {
            throw CLIError(.node, "\(party.role.nodeName) is not running")
        }
        if process.hasExited {
            throw CLIError(.node, "\(process.name) had already stopped: it \(process.outcome)\n\(process.stderrTail())")
        }
        return process
    }

    /// Each node that ended since the last look, not by a step (killed from outside, crashed), said once with how it
    /// ended and where its log is: the console said nothing until a call to it failed, and then not why.
    func endedNotByAStep() -> [String] {
        var lines: [String] = []
        for party in ScenarioParty.allCases {
            guard let process = running[party], !announcedEnds.contains(process.pid), process.hasExited else {
                continue
            }
            announcedEnds.insert(process.pid)
            lines.append(
                "\(process.name) pid=\(process.pid) \(process.outcome), not by a step; its log: "
                    + "\(process.stderrURL.path); a 'start \(party)' step starts it again")
        }
        return lines
    }

    /// A node that ended on its own while the scenario ran is a failure of the run, whatever the script expects.
    func unexpectedExit() -> String? {
        for party in ScenarioParty.allCases {
            guard let process = running[party], process.hasExited else { continue }
            running[party] = nil
            return "\(process.name) \(process.outcome) on its own\n\(process.stderrTail())"
        }
        return nil
    }

    /// Stops whatever still runs (SIGTERM, as the demo does) and the proxies; false when a node did not stop cleanly.
    func stopAll() -> Bool {
        for party in paused { running[party]?.send(SIGCONT) }
        paused = []
        let processes = ScenarioParty.allCases.compactMap { running[$0] }
        running = [:]
        let clean = sandbox.stop(processes)
        links.stop()
        return clean
    }

    /// The issuer registers with the TSP in the background once it runs; its cards are unknown to the TSP until then.
    private func waitForRegistration(_ process: ChildProcess) throws(CLIError) {
        let deadline = Date().addingTimeInterval(sandbox.timeout)
        while true {
            let text = (try? String(contentsOf: process.stderrURL, encoding: .utf8)) ?? ""
            if text.contains("registered with the TSP") { return }
            try sandbox.interruption.check()
            if process.waitForExit(seconds: 0.05) {
                throw CLIError(.node, "\(process.name) \(process.outcome) before registering with the TSP")
            }
            // The TSP it registers with ending meanwhile is said at once, by its name, with its last words: the
            // wait ran to its end and blamed the issuer, pointing at a log the run had removed by then. The TSP
            // only: a wallet that had ended before was blamed for a registration it has no part in.
            if let tsp = running[.tsp], tsp !== process, tsp.hasExited {
                throw CLIError(
                    .node,
                    "\(tsp.name) \(tsp.outcome) while \(process.name) was registering with it\n\(tsp.stderrTail())")
            }
            guard Date() < deadline else {
                throw CLIError(
                    .node,
                    "\(process.name) did not register with the TSP within \(sandbox.timeout) s; its log ends:\n"
                        + process.stderrTail())
            }
        }
    }
}

extension ScenarioParty {
    init(_ role: NodeRole) {
        switch role {
        case .tsp: self = .tsp
        case .issuer: self = .issuer
        case .wallet: self = .wallet
        }
    }

    var role: NodeRole {
        switch self {
        case .tsp: .tsp
        case .issuer: .issuer
        case .wallet: .wallet
        }
    }
}
