import Foundation
import TokenetFaults
import TokenetNode
import TokenetRPC
import TokenetWire

/// Provisions cards across the three running nodes the way people would with the CLI: the cardholder in the wallet,
/// an operator at the issuer pushing cards, and an operator at the TSP looking at tokens and their audit trail.
///
/// Each scenario checks its outcome; the first one that differs from what the fixture promises fails the demo.
struct ProvisioningChoreography: DemoChoreography {
    let pkiDirectory: String
    let fixture: DemoFixture
    let timeout: Double
    let interruption: DemoInterruption
    /// The fault proxy `tsp-node --issuer` points at; without one the scenario that steers it is left out.
    let issuerLink: FaultProxy?

    init(
        pkiDirectory: String, fixturePath: String, timeout: Double, interruption: DemoInterruption,
        issuerLink: FaultProxy? = nil
    ) throws(CLIError) {
        self.pkiDirectory = pkiDirectory
        self.fixture = try DemoFixture(path: fixturePath)
        self.timeout = timeout
        self.interruption = interruption
        self.issuerLink = issuerLink
    }

    var title: String { "Provisioning cards across the three nodes (as operator-1 over mutual TLS)" }

    func run(cluster: DemoCluster, report: (String) -> Void) throws(CLIError) {
        let nodes = try Nodes(
            cluster: cluster, pkiDirectory: pkiDirectory, timeout: timeout, interruption: interruption)
        try waitForIssuerRegistration(cluster: cluster, report: report)
        var scenarios: [(String, (Nodes, (String) -> Void) throws(CLIError) -> Void)] = [
            ("a Visa card added by hand (T&C in Spanish) and approved", manualApproved),
            ("a Mastercard card through an issuer push receipt", pushReceipt),
            ("a card through a push session (issuer -> wallet backend -> TSP)", pushSession),
            ("a card the issuer declines", declined),
            ("a card that needs step-up: INACTIVE, then ACTIVE with a one-time code", stepUp),
            ("a by-score card stepped up for the wallet's risk: activated by the call centre", callCentre),
            ("the demo user enrols in the issuer app: one account, then the linked ones; logs in", strongAuth),
            ("a step-up card activated in the issuer app (app-to-app)", activateInApp),
            ("a card its issuer keeps out of wallets: not eligible", notEligible),
        ]
        if let issuerLink, timeout > Self.issuerCutOffNeeds {
            let title = "the TSP cut off from the issuer: its stand-in decides; then the link is cut and heals"
            scenarios.append((title, { nodes, report throws(CLIError) in try issuerCutOff(issuerLink, nodes, report) }))
        } else if issuerLink != nil {
            let needed = Int(Self.issuerCutOffNeeds)
            report("  (the TSP cut off from the issuer is left out: it needs --timeout above \(needed) s)")
        }
        for (index, (title, scenario)) in scenarios.enumerated() {
            try interruption.check()
            report("Scenario \(index + 1): \(title)")
            try scenario(nodes, report)
        }
        report("Each party's view")
        let cards = try nodes.call(.wallet, "wallet cards", report) { client, options in
            try await WalletCommand.allCards(client) { options }
        }
        report(indent(PartyText.walletCards(cards), by: 4))
        let tokens = try nodes.call(.tsp, "tsp tokens", report) { client, options in
            try await TSPCommand.allTokens(client) { options }
        }
        report(indent(PartyText.tokens(tokens), by: 4))
        let digitized = cards.cards.filter { !$0.digitalCardID.isEmpty }
        try expect(
            Set(tokens.tokens.map(\.digitalCardID)).isSuperset(of: digitized.map(\.digitalCardID)),
            "every digital card in the wallet is a token at the TSP")
    }

    /// The issuer registers with the TSP in the background once it runs; its cards are unknown to the TSP until then.
    private func waitForIssuerRegistration(cluster: DemoCluster, report: (String) -> Void) throws(CLIError) {
        let log = "\(cluster.workspace)/\(NodeRole.issuer.nodeName)/\(NodeRole.issuer.nodeName).stderr.log"
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if text.contains("registered with the TSP") { break }
            try interruption.check()
            guard Date() < deadline else {
                throw CLIError(.node, "issuer-node did not register with the TSP within \(timeout) s (see \(log))")
            }
            usleep(50_000)
        }
        report("  issuer-node registered with tsp-node")
    }
}

extension ProvisioningChoreography {
    /// The three nodes, reached as the operator, one connection per call.
    struct Nodes: Sendable {
        var options: [NodeRole: InspectOptions]
        /// Ends a call in progress when a stop signal comes: checked between scenarios only, Ctrl-C waited for the
        /// rest of one (9 s for a stand-in's wait and the heal after it).
        let interruption: DemoInterruption

        init(
            cluster: DemoCluster, pkiDirectory: String, timeout: Double, interruption: DemoInterruption
        ) throws(CLIError) {
            self.interruption = interruption
            options = [:]
            for role in NodeRole.allCases {
                guard let text = cluster.address(of: role), let address = HostPort(parsing: text) else {
                    throw CLIError(.node, "\(role.nodeName) has no usable address")
                }
                options[role] = InspectOptions(
                    operatorAt: address, pkiDirectory: pkiDirectory, deadline: .milliseconds(Int64(timeout * 1000)))
            }
        }

        /// Makes one call with a fresh trace id, printing `[party] what  trace ID`; a non-OK status fails the demo.
        func call<Response: Sendable>(
            _ role: NodeRole, _ what: String, _ report: (String) -> Void,
            _ body: @escaping @Sendable (RPCClient, CallOptions) async throws -> Response
        ) throws(CLIError) -> Response {
            try interruption.check()
            let options = self.options[role]!
            let interruption = self.interruption
            let outcome: Result<(Response, String), CLIError> = runBlocking {
                await interruption.racing {
                    await Self.call(role, what, options, body)
                }
            }
            let (response, traceID) = try outcome.get()
            report("  [\(role.rawValue)] \(what)  (trace \(traceID))")
            return response
        }

        private static func call<Response: Sendable>(
            _ role: NodeRole, _ what: String, _ options: InspectOptions,
            _ body: @escaping @Sendable (RPCClient, CallOptions) async throws -> Response
        ) async -> Result<(Response, String), CLIError> {
            let session: InspectSession
            do {
                session = try await InspectSession.connect(options)
            } catch let error as CLIError {
                return .failure(error)
            } catch {
                return .failure(CLIError(.node, "\(role.rawValue) \(what): cannot connect: \(error)"))
            }
            var callOptions = session.callOptions
            let traceID = Metadata.newTraceID()
            callOptions.metadata.setTraceID(traceID)
            let result: Result<(Response, String), CLIError>
            do {
                result = .success((try await body(session.client, callOptions), traceID))
            } catch let error as RPCError {
                result = .failure(CLIError(.node, "\(role.rawValue) \(what) failed (trace \(traceID)): \(error)"))
            } catch {
                result = .failure(CLIError(.node, "\(role.rawValue) \(what) failed", cause: DemoCause(error)))
            }
            await session.close()
            return result
        }
    }

    func expect(_ condition: Bool, _ what: String) throws(CLIError) {
        guard condition else { throw CLIError(.node, "unexpected outcome: expected \(what)") }
    }

    func indent(_ text: String, by spaces: Int) -> String {
        let padding = String(repeating: " ", count: spaces)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { padding + $0 }.joined(
            separator: "\n")
    }
}
