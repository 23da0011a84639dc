import Foundation
import TokenetNode
import TokenetScenario

/// Scripts run against nodes someone else runs (`--tsp`, `--issuer`, `--wallet` with `--pki`): your own
/// implementation of a party, or nodes started by hand. Such nodes can only be called: steps that fault a link or
/// stop, kill or start a node need the sandbox's own nodes and proxies, and are refused before anything runs.
extension ScenarioCommand {
    func checkAttachable(_ scenario: Scenario) throws(CLIError) {
        for step in scenario.steps {
            if step.action.controlsProcesses {
                throw CLIError(
                    .usage,
                    "scenario: \(scenario.source):\(step.line): faults, stop, kill, start and pause need the nodes the scenario "
                        + "starts itself; run it without --tsp, --issuer and --wallet")
            }
            let party: ScenarioParty? =
                switch step.action {
                case .call(let call): call.party
                case .watch(let watch): watch.party
                default: nil
                }
            if let party, attached[party] == nil {
                throw CLIError(
                    .usage, "scenario: \(scenario.source):\(step.line): calls \(party), but no --\(party) is given")
            }
        }
    }

    /// The folder of `--pki`, once it holds the operator's files and those of every identity the scripts take on.
    func checkAttachedPKI(_ scenarios: [Scenario]) throws(CLIError) -> URL {
        let pki = URL(fileURLWithPath: pkiDirectory ?? ".")
        for file in ["ca.pem", "operator.pem", "operator.key"]
        where !FileManager.default.fileExists(atPath: pki.appendingPathComponent(file).path) {
            throw CLIError(.usage, "scenario: --pki \(pki.path) has no \(file)")
        }
        // So are the files of each identity a script takes on: a missing key was found only by the next call, as
        // an UNAVAILABLE outcome that an `expect UNAVAILABLE` line took for the node's answer.
        for scenario in scenarios {
            for step in scenario.steps {
                guard case .identity(let role) = step.action else { continue }
                // An identity of the script's own is made only in a sandbox: here, with its files, by hand.
                let own = Scenario.ownIdentity(role)
                let name = own?.id ?? role
                let hint = own.map { " (make it with: tokenet pki init \(pki.path) --node \($0.role)/\($0.id))" } ?? ""
                for file in ["\(name).pem", "\(name).key"]
                where !FileManager.default.fileExists(atPath: pki.appendingPathComponent(file).path) {
                    throw CLIError(
                        .usage,
                        "scenario: \(scenario.source):\(step.line): identity \(role): --pki \(pki.path) has no "
                            + "\(file)\(hint)")
                }
            }
        }
        return pki
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
            throw error
        } catch {
            throw CLIError(.node, "scenario: \(error)")
        }
    }
}
