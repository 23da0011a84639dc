import Foundation
import TokenetNode
import TokenetScenario
import TokenetTransport

/// Scripts run against nodes someone else runs (`--tsp`, `--issuer`, `--wallet` with `--pki`): your own
/// implementation of a party, or nodes started by hand. Such nodes can only be called: steps that fault a link or
/// stop, kill or start a node need the sandbox's own nodes and proxies, and are refused before anything runs.
extension ScenarioCommand {
    /// The steps of `scenario` that nodes given with --tsp, --issuer and --wallet cannot run: faults and node
    /// control, and calls of a party not given. Every one, with its line.
    func attachableMistakes(_ scenario: Scenario) -> [(line: Int, error: CLIError)] {
        var mistakes: [(line: Int, error: CLIError)] = []
        for step in scenario.steps {
            if step.action.controlsProcesses {
                mistakes.append(
                    (
                        step.line,
                        CLIError(
                            .usage,
                            "scenario: \(scenario.source):\(step.line): faults, stop, kill, start and pause need the nodes "
                                + "the scenario starts itself; run it without --tsp, --issuer and --wallet")
                    ))
                continue
            }
            let party: ScenarioParty? =
                switch step.action {
                case .call(let call): call.party
                case .spawn(let spawn): spawn.call.party
                case .watch(let watch): watch.party
                // It asks the TSP for its current key.
                case .encrypt: .tsp
                default: nil
                }
            if let party, attached[party] == nil {
                mistakes.append(
                    (
                        step.line,
                        CLIError(
                            .usage,
                            "scenario: \(scenario.source):\(step.line): calls \(party), but no --\(party) is given")
                    ))
            }
        }
        return mistakes
    }

    /// The folder of `--pki`, once it holds the operator's files.
    func checkAttachedPKI() throws(CLIError) -> URL {
        let pki = URL(fileURLWithPath: pkiDirectory ?? ".")
        for file in ["ca.pem", "operator.pem", "operator.key"]
        where !FileManager.default.fileExists(atPath: pki.appendingPathComponent(file).path) {
            throw CLIError(.usage, "scenario: --pki \(pki.path) has no \(file)")
        }
        return pki
    }

    /// The identities `scenario` takes on whose files `pki` lacks, or whose certificate is another's: a missing key
    /// was found only by the next call, as an UNAVAILABLE outcome that an `expect UNAVAILABLE` line took for the
    /// node's answer.
    func identityMistakes(_ scenario: Scenario, pki: URL) -> [(line: Int, error: CLIError)] {
        var mistakes: [(line: Int, error: CLIError)] = []
        for step in scenario.steps {
            guard case .identity(let role) = step.action else { continue }
            // An identity of the script's own is made only in a sandbox: here, with its files, by hand. The role's
            // own ID (wallet/wallet-1) is the role's certificate, unless the PKI has one for the ID.
            let own = Scenario.ownIdentity(role)
            let name = ScenarioRunner.certificateName(for: role, in: pki)
            let hint =
                own.flatMap {
                    $0.id == name ? " (make it with: tokenet pki init \(pki.path) --node \($0.role)/\($0.id))" : nil
                } ?? ""
            let place = "scenario: \(scenario.source):\(step.line): identity \(role)"
            if let file = ["\(name).pem", "\(name).key"].first(where: {
                !FileManager.default.fileExists(atPath: pki.appendingPathComponent($0).path)
            }) {
                mistakes.append(
                    (step.line, CLIError(.usage, "\(place): --pki \(pki.path) has no \(file)\(hint)")))
                continue
            }
            // The certificate must be the identity's: another party's would make the calls as that party.
            if let problem = Self.identityProblem(of: pki, name: name, role: own?.role ?? role, id: own?.id) {
                mistakes.append((step.line, CLIError(.usage, "\(place): \(problem)")))
            }
        }
        return mistakes
    }

    /// Why `NAME.pem` of `pki` is not the certificate of `role` (and of `id`, for an identity of the script's own),
    /// or nil when it is.
    static func identityProblem(of pki: URL, name: String, role: String, id: String?) -> String? {
        let certificate = pki.appendingPathComponent("\(name).pem").path
        let identity: PeerIdentity
        do {
            let context = try TLSContext(
                configuration: .client(
                    certificateChainFile: certificate, privateKeyFile: pki.appendingPathComponent("\(name).key").path,
                    trustedCAFile: pki.appendingPathComponent("ca.pem").path))
            identity = try context.checkOwnCertificate()
        } catch {
            return "\(certificate): \(error)"
        }
        let wanted = id.map { "tokenet://\(role)/\($0)" } ?? "a \(role) certificate (tokenet://\(role)/…)"
        guard identity.role.rawValue == role, id == nil || identity.nodeID == id else {
            return "\(certificate) is tokenet://\(identity.role.rawValue)/\(identity.nodeID), not \(wanted)"
        }
        return nil
    }

    func runAttached(_ scenario: Scenario, pki: URL, interruption: DemoInterruption) throws(CLIError)
        -> ScenarioResult
    {
        let started = ContinuousClock.now
        printOut("Scenario \(scenario.source) (against the nodes given)")
        let runner = ScenarioRunner(
            scenario: scenario, addresses: attached, pki: pki, interruption: interruption, verbose: verbose)
        do {
            let calls = try runner.run()
            printOut("Scenario \(scenario.source) OK: \(summary(scenario, calls: calls, since: started))")
            return ScenarioResult(source: scenario.source, status: 0, failure: nil, details: nil, since: started)
        } catch let error as ScenarioRunner.Failure {
            let failure = "FAILED at line \(error.line): \(error.reason)"
            let hint = error.traceID.map { "Look for trace_id=\($0) in the nodes' logs." }
            printError("Scenario \(scenario.source) \(failure)")
            if let hint { printError(hint) }
            return ScenarioResult(
                source: scenario.source, status: error.scriptError ? 2 : 1, failure: failure, details: hint,
                since: started)
        } catch let error as CLIError {
            // An interruption names the step it stopped: usually the one that hung.
            guard let line = runner.currentLine else { throw error }
            throw CLIError(error.code, "\(error.message) at line \(line)", cause: error.cause)
        } catch {
            throw CLIError(.node, "scenario: \(error)")
        }
    }
}
