import Foundation
import Synchronization
import TokenetFaults
import TokenetNode
import TokenetRPC
import TokenetScenario
import TokenetWire

/// Runs one parsed scenario against its own sandbox and prints each step as it goes. The first step whose outcome
/// differs from the script's ends the run (the rest would run on a state the script did not foresee); the nodes
/// are stopped either way.
final class ScenarioRunner {
    let scenario: Scenario
    /// Where each party answers, and the directory with the operator's certificate and the CA.
    let addresses: [ScenarioParty: HostPort]
    let pki: URL
    let interruption: DemoInterruption
    /// The nodes and proxies of the run's own sandbox; nil for nodes someone else runs (`--tsp`, …), which a
    /// script can only call.
    let nodes: ScenarioNodes?
    let verbose: Bool
    var variables = ScenarioVariables()
    /// The line of the step running, or last run: what an interruption names, as the step a run was stopped in is
    /// usually the one that hung.
    private(set) var currentLine: Int?
    /// The deadline of each call; `deadline D` lines change it.
    var deadline = PartySession.defaultDeadline
    /// The certificate of each call and watch (`identity ROLE`).
    var identity = "operator"
    /// The request metadata of each call and watch (`header KEY: VALUE`).
    var headers = Metadata()
    /// Open watches, and how many of each one's messages earlier `await` lines have taken.
    var watches: [String: ScenarioWatchStream] = [:]
    var taken: [String: Int] = [:]
    /// The response (or awaited message) that a `save` typed at the console reads, with its trace id.
    var lastResponse: (message: JSONValue?, traceID: String, type: (any ProtoMessage.Type)?)?
    /// The outcome that an `expect` typed at the console checks.
    var lastOutcome: ScenarioExpectation.Outcome?
    /// The call typed last at the console and its line: `expect within D` typed after it calls it again until the
    /// expectation is met or D has passed, as in a script (it was accepted and then judged once).
    var lastConsoleCall: (call: ScenarioCall, line: Int)?
    /// The line of the call typed last at the console when it was refused before it was made (a request that is no
    /// message of its type): an expect or save typed next is about it, and was judged on the call before it.
    var consoleCallNotMade: Int?
    /// The calls `spawn` started and no `join` has waited for yet.
    var spawned: [String: SpawnedCall] = [:]
    private var calls = 0

    init(scenario: Scenario, nodes: ScenarioNodes, verbose: Bool) {
        self.scenario = scenario
        addresses = nodes.listen
        pki = nodes.pki
        interruption = nodes.sandbox.interruption
        self.nodes = nodes
        self.verbose = verbose
    }

    init(
        scenario: Scenario, addresses: [ScenarioParty: HostPort], pki: URL, interruption: DemoInterruption,
        verbose: Bool
    ) {
        self.scenario = scenario
        self.addresses = addresses
        self.pki = pki
        self.interruption = interruption
        nodes = nil
        self.verbose = verbose
    }

    /// A step whose outcome is not the script's: the line, and what happened instead.
    struct Failure: Error {
        var line: Int
        var reason: String
        /// Whether the line itself is wrong (found only as it ran, such as a request that does not fit its type),
        /// rather than the outcome.
        var scriptError = false
        /// The trace id of the call that failed, whose lines in the nodes' logs tell what happened across them.
        var traceID: String?

        /// The reason is masked (`maskPAN`) here, once for every way a failure is printed or reported: it may quote
        /// the script's own text (a header, a saved value, a request), which may hold a card number.
        init(line: Int, reason: String, scriptError: Bool = false, traceID: String? = nil) {
            self.line = line
            self.reason = maskPAN(reason)
            self.scriptError = scriptError
            self.traceID = traceID
        }
    }

    /// Runs every step; returns the number of calls made. Throws `Failure` for a step that did not go as written,
    /// and `CLIError` when the run itself broke (a node that cannot start, an interruption).
    func run() throws -> Int {
        defer {
            cancelSpawned()
            closeWatches()
        }
        for step in scenario.steps {
            try interruption.check()
            currentLine = step.line
            if let exit = nodes?.unexpectedExit() { throw Failure(line: step.line, reason: exit) }
            try run(step)
        }
        if let exit = nodes?.unexpectedExit() { throw Failure(line: scenario.steps.last?.line ?? 0, reason: exit) }
        return calls
    }

    func run(_ step: ScenarioStep) throws {
        let line = step.line
        if step.action.controlsProcesses && nodes == nil {
            throw Failure(line: line, reason: "only nodes the scenario started can be faulted, stopped or started")
        }
        switch step.action {
        case .call(let call):
            try runCall(call, line: line)
        case .fault(let link, let command):
            guard let proxy = nodes?.links.proxies[link] else {
                throw Failure(line: line, reason: "no proxy on \(link)")
            }
            switch command {
            case .set(let fault, let direction): proxy.set(fault, only: direction)
            case .reset: proxy.reset()
            case .status: break
            }
            let cut = command == .reset ? "every connection cut; " : ""
            print(line, "fault \(link): \(cut)in force: \(proxy.summary)")
        case .stop(let party):
            do {
                print(line, "stop \(party): \(try nodes!.stop(party))")
            } catch {
                throw Failure(line: line, reason: error.message)
            }
        case .kill(let party):
            do {
                print(line, "kill \(party): \(try nodes!.kill(party))")
            } catch {
                throw Failure(line: line, reason: error.message)
            }
        case .start(let party):
            do {
                try nodes!.start(party) { print(line, "start \(party): \($0)") }
            } catch {
                throw Failure(line: line, reason: error.message)
            }
        case .pause(let party), .resume(let party):
            let pausing = if case .pause = step.action { true } else { false }
            do {
                let done = try nodes!.signal(party, pausing ? SIGSTOP : SIGCONT)
                print(line, "\(pausing ? "pause" : "resume") \(party): \(done)")
            } catch {
                throw Failure(line: line, reason: error.message)
            }
        case .deadline(let duration):
            deadline = duration
            print(line, "deadline \(FaultCommand.format(duration)) for the calls below")
        case .sleep(let duration):
            print(line, "sleep \(FaultCommand.format(duration))")
            try sleep(duration)
        case .identity(let role):
            identity = try certificate(for: role, line: line)
            // The role's own ID (wallet/wallet-1) is the PKI's certificate of the role, as the line may not suggest.
            let file = role.contains("/") && !role.hasSuffix("/\(identity)") ? " (\(identity).pem)" : ""
            print(line, "identity \(role) for the calls below\(file)")
        case .header(let text):
            guard let text else {
                headers = Metadata()
                return print(line, "header clear: no request metadata for the calls below")
            }
            do {
                try InspectOptions.addHeader(
                    try variables.fill(text, inJSON: false), to: &headers, command: "header")
            } catch let error as CLIError {
                throw Failure(
                    line: line, reason: error.message.replacing("header: -H: ", with: "header: "), scriptError: true)
            } catch let error as ScenarioError {
                throw Failure(line: line, reason: error.message, scriptError: true)
            }
            // What the script wrote, as echo prints it: masked.
            print(line, "header \(maskPAN(text))")
        case .watch(let watch):
            try openWatch(watch, line: line)
        case .await(let awaited):
            try runAwait(awaited, line: line)
        case .encrypt(let encrypt):
            try runEncrypt(encrypt, line: line)
        case .spawn(let spawn):
            try runSpawn(spawn, line: line)
        case .join(let join):
            try runJoin(join, line: line)
        case .echo(let text):
            do {
                // A card number typed into the script (or a saved value) is masked, as everything else the run
                // prints; the nodes answer with masked ones.
                print(line, maskPAN(try variables.fill(text, inJSON: false)))
            } catch {
                throw Failure(line: line, reason: error.message, scriptError: true)
            }
        }
    }

    /// Calls, judges the outcome (again and again under `expect within`), then saves the fields the script keeps.
    /// A line typed at the console (`tokenet up`): a call runs whatever its outcome and shows every response; an
    /// `expect` checks the outcome of the call before it and a `save` reads its response, as in a script; a step
    /// that fails says why and the console goes on.
    func runAtConsole(_ effect: Scenario.Parser.Effect, line: Int) throws {
        switch effect {
        case .none:
            return
        case .step(let step):
            if case .join(let join) = step.action {
                // Shown whatever its outcome, for the expect typed next; there is no call to make again.
                (lastConsoleCall, consoleCallNotMade) = (nil, nil)
                return try runJoin(join, line: line, judged: false)
            }
            guard case .call(let call) = step.action else { return try run(step) }
            calls += 1
            (lastResponse, lastOutcome, lastConsoleCall, consoleCallNotMade) = (nil, nil, nil, line)
            let result = try makeCall(call, line: line)
            consoleCallNotMade = nil
            print(line, summary(call, result, attempts: 1))
            printResponses(result, force: true)
            lastResponse = (result.outcome.responses.last, result.traceID, result.outcome.responseType)
            lastOutcome = result.outcome
            lastConsoleCall = (call, line)
        case .expectation(let expectation):
            if let notMade = consoleCallNotMade {
                throw Failure(
                    line: line, reason: "the call on line \(notMade) was not made (see its error): nothing to expect",
                    scriptError: true)
            }
            guard let outcome = lastOutcome else {
                throw Failure(line: line, reason: "no call has ended yet", scriptError: true)
            }
            let mismatch = try judge(expectation, outcome, line: line)
            if let mismatch {
                guard expectation.within != nil, let last = lastConsoleCall else {
                    throw Failure(line: line, reason: shownStatusMessage(mismatch))
                }
                // Called again under the expectation, every retry interval until it is met or `within` has passed.
                var again = last.call
                var judged = expectation
                judged.line = line
                again.expectation = judged
                again.saves = []
                try runCall(again, line: line)
            }
            print(line, "expect \(expectation.code.name): met")
        case .save(let save):
            if let notMade = consoleCallNotMade {
                throw Failure(
                    line: line, reason: "save \(save.name): the call on line \(notMade) was not made (see its error)")
            }
            try self.save(
                [save], from: lastResponse?.message, type: lastResponse?.type ?? nil,
                traceID: lastResponse?.traceID ?? "")
        }
    }

    /// Why `outcome` does not meet `expectation` (nil when it does); a script error (an object that is not JSON)
    /// as the line's failure.
    private func judge(
        _ expectation: ScenarioExpectation, _ outcome: ScenarioExpectation.Outcome, line: Int
    ) throws -> String? {
        do {
            return try expectation.mismatch(outcome, variables: variables, mask: maskPAN)
        } catch {
            throw Failure(line: line, reason: error.message, scriptError: true)
        }
    }

    private func runCall(_ call: ScenarioCall, line: Int) throws {
        let expectation = call.expectation
        let giveUp = expectation.within.map { ContinuousClock.now + $0 }
        // A call that changes something is made again only while it fails: once one has ended OK it has done its
        // work, and a repeat met "already done" and took that for the refusal the line expected (a suspend of an
        // ACTIVE token passed `expect within 5s FAILED_PRECONDITION`).
        let repeatable = Self.changesNothing(call.method)
        var endedOK = false
        var attempts = 0
        /// The last call that `within` did not cut short, and why it did not meet the expectation.
        var lastWhole: (mismatch: String, result: CallResult)?
        while true {
            attempts += 1
            calls += 1
            // Each call ends by the time `within` ends: one call that hung for the whole call deadline held the line
            // for 10 s past its `within 1s`.
            let left = giveUp.map { max(.milliseconds(1), $0 - .now) }
            let result = try makeCall(call, line: line, deadline: left.map { min(deadline, $0) })
            let mismatch: String?
            do {
                mismatch = try expectation.mismatch(result.outcome, variables: variables, mask: maskPAN)
            } catch {
                throw Failure(line: expectation.line ?? line, reason: error.message, scriptError: true)
            }
            // The reason quotes the status message the call ended with, which the peer wrote: it is shown as the
            // call's summary shows it (`shownStatusMessage`), a card number masked and a long message cut.
            if let mismatch = mismatch.map(shownStatusMessage) {
                // A call that ran out of the time `within` left it says nothing of the node: a loaded machine let
                // the last of five calls 37 ms, and the line failed "got DEADLINE_EXCEEDED" where every call before
                // it had answered OK. The last whole call is the one reported.
                let cutShort =
                    result.outcome.code == .deadlineExceeded && left.map { $0 < deadline } == true
                if !cutShort { lastWhole = (mismatch, result) }
                endedOK = result.outcome.code == .ok && !repeatable
                if !endedOK, let giveUp, ContinuousClock.now + ScenarioExpectation.retryInterval < giveUp {
                    try sleep(ScenarioExpectation.retryInterval)
                    continue
                }
                let (reported, shown) = cutShort ? (lastWhole ?? (mismatch, result)) : (mismatch, result)
                print(line, summary(call, shown, attempts: attempts))
                printResponses(shown, force: true)
                var after =
                    attempts > 1 ? " after \(attempts) calls in \(FaultCommand.format(expectation.within!))" : ""
                if cutShort && lastWhole != nil { after += " (the last call was cut short by the end of that time)" }
                if endedOK && expectation.within != nil {
                    after +=
                        "; \(call.method) changes what it acts on (its .proto does not declare it free of side "
                        + "effects), so within makes it again only while it fails, and this call ended OK"
                }
                throw Failure(line: expectation.line ?? line, reason: reported + after, traceID: shown.traceID)
            }
            print(line, summary(call, result, attempts: attempts))
            printResponses(result, force: false)
            lastResponse = (result.outcome.responses.last, result.traceID, result.outcome.responseType)
            lastOutcome = result.outcome
            try save(
                call.saves, from: result.outcome.responses.last, type: result.outcome.responseType,
                traceID: result.traceID)
            return
        }
    }

    /// `type`, the response's message type when this build knows it, reads a field the JSON leaves out as the
    /// default it holds.
    func save(
        _ saves: [ScenarioCall.Save], from response: JSONValue?, type: (any ProtoMessage.Type)?, traceID: String
    ) throws {
        for save in saves {
            guard let last = response else {
                throw Failure(
                    line: save.line, reason: "save \(save.name): the call returned no response", traceID: traceID)
            }
            let interruption = self.interruption
            let found = type.map { last.value(at: save.field, type: $0) } ?? last.value(at: save.field)
            let extracted = found.flatMap {
                save.extract(from: $0) { (try? interruption.check()) == nil }
            }
            try interruption.check()
            switch extracted {
            case .success(let value):
                variables[save.name] = value
                print(save.line, "save \(save.name) = \(value.text())")
            case .failure(let error) where error.code == .regexTimeLimit:
                throw Failure(line: save.line, reason: "save \(save.name): \(error.message)", scriptError: true)
            case .failure(let error):
                throw Failure(
                    line: save.line, reason: "save \(save.name) \(save.field): \(error.message)", traceID: traceID)
            }
        }
    }

    /// Counts a call made outside `runCall` (a spawned one).
    func countCall() { calls += 1 }

    func summary(_ call: ScenarioCall, _ result: CallResult, attempts: Int) -> String {
        let outcome = result.outcome
        let status =
            outcome.message.isEmpty ? outcome.code.name : "\(outcome.code.name): \(shownStatusMessage(outcome.message))"
        // Worth a mention: a stream's count, and responses that came before an error.
        let streamed = outcome.code == .ok ? outcome.responses.count != 1 : !outcome.responses.isEmpty
        let count =
            streamed ? ", \(outcome.responses.count) response\(outcome.responses.count == 1 ? "" : "s")" : ""
        let tries = attempts > 1 ? ", call \(attempts)" : ""
        // A call to a local node may take less than a millisecond, which read "(0 ms)".
        return
            "call \(call.party) \(call.method) -> \(status)  (\(DurationText.describe(result.elapsed))\(count)\(tries), "
            + "trace \(result.traceID))"
    }

    /// With `--verbose` every response, and on a failure the last one, indented under its call.
    func printResponses(_ result: CallResult, force: Bool) {
        let shown = verbose ? result.outcome.responses : force ? Array(result.outcome.responses.suffix(1)) : []
        for response in shown {
            printOut(response.text(indent: 2).split(separator: "\n").map { "          \($0)" }.joined(separator: "\n"))
        }
    }

    func sleep(_ duration: Duration) throws {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            try interruption.check()
            let left = end - ContinuousClock.now
            let step = min(left, .milliseconds(50))
            usleep(
                UInt32(max(0, step.components.attoseconds / 1_000_000_000_000 + step.components.seconds * 1_000_000)))
        }
    }

    func print(_ line: Int, _ text: String) {
        let number = String(line)
        printOut(String(repeating: " ", count: max(0, 5 - number.count)) + number + "  " + text)
    }
}
