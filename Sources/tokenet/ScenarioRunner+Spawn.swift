import Foundation
import Synchronization
import TokenetNode
import TokenetRPC
import TokenetScenario

/// `spawn` and `join`: a call made in the background while the script goes on, so that two calls race (a suspend
/// against a delete, a payment against a suspension), and judged when the script joins it.
extension ScenarioRunner {
    /// A call on its way: its task, and what `join` prints and judges it with.
    final class SpawnedCall: Sendable {
        let call: ScenarioCall
        /// The spawn's line: a request the node's types refuse is the spawn line's mistake.
        let line: Int
        let traceID: String
        let started: ContinuousClock.Instant
        /// The outcome, and when the call ended: a join made long after it prints how long the call took.
        let task: Task<(Result<ScenarioExpectation.Outcome, CLIError>, ContinuousClock.Instant), Never>

        init(
            call: ScenarioCall, line: Int, traceID: String,
            task: Task<(Result<ScenarioExpectation.Outcome, CLIError>, ContinuousClock.Instant), Never>
        ) {
            self.call = call
            self.line = line
            self.traceID = traceID
            started = .now
            self.task = task
        }
    }

    /// Starts the call now, with the identity, headers and deadline of this line, and goes on at once.
    func runSpawn(_ spawn: ScenarioSpawn, line: Int) throws {
        let call = spawn.call
        let prepared = try prepare(call.party, call.method, call.request, line: line)
        let traceID = prepared.traceID
        let task = Self.start(prepared.path, prepared.texts, prepared.options, traceID, line: line)
        spawned[spawn.name] = SpawnedCall(call: call, line: line, traceID: traceID, task: task)
        countCall()
        print(line, "spawn \(spawn.name): call \(call.party) \(call.method) started  (trace \(traceID))")
    }

    private static func start(
        _ path: String, _ texts: [String], _ options: InspectOptions, _ traceID: String, line: Int
    ) -> Task<(Result<ScenarioExpectation.Outcome, CLIError>, ContinuousClock.Instant), Never> {
        Task.detached {
            let result = await call(path: path, texts: texts, options: options, traceID: traceID, line: line)
            return (result, ContinuousClock.now)
        }
    }

    /// Waits for the spawned call (Ctrl-C ends the wait, and the call), then judges and saves as after a call; at the
    /// console (`judged` false) it shows the outcome for the `expect` lines typed next.
    func runJoin(_ join: ScenarioJoin, line: Int, judged: Bool = true) throws {
        guard let spawned = spawned.removeValue(forKey: join.name) else {
            throw Failure(
                line: line, reason: "join \(join.name): no call was spawned under that name", scriptError: true)
        }
        let interruption = self.interruption
        let task = spawned.task
        let ended = Mutex<ContinuousClock.Instant?>(nil)
        // The call runs in a task of its own: a Ctrl-C that ends the wait cancels it here, or the wait would last
        // until the call's deadline.
        let waited = Self.interruptible(line: line, interruption: interruption) {
            await withTaskCancellationHandler {
                let (result, at) = await task.value
                ended.withLock { $0 = at }
                return result
            } onCancel: {
                task.cancel()
            }
        }
        let outcome: ScenarioExpectation.Outcome
        switch waited {
        case .success(let value):
            outcome = value
        case .failure(let error):
            task.cancel()
            try interruption.check()
            guard error.code == .usage else {
                throw Failure(line: line, reason: error.message, traceID: spawned.traceID)
            }
            throw Failure(
                line: spawned.line, reason: "spawn \(join.name): " + error.message.replacing("call: ", with: ""),
                scriptError: true, traceID: spawned.traceID)
        }
        let result = CallResult(
            outcome: outcome, traceID: spawned.traceID,
            elapsed: (ended.withLock { $0 } ?? ContinuousClock.now) - spawned.started)
        let shown = "join \(join.name): " + summary(spawned.call, result, attempts: 1)
        lastResponse = (outcome.responses.last, result.traceID, outcome.responseType)
        lastOutcome = outcome
        guard judged else {
            print(line, shown)
            return printResponses(result, force: true)
        }
        let mismatch: String?
        do {
            mismatch = try join.expectation.mismatch(outcome, variables: variables, mask: maskPAN)
        } catch {
            throw Failure(line: join.expectation.line ?? line, reason: error.message, scriptError: true)
        }
        print(line, shown)
        printResponses(result, force: mismatch != nil)
        if let mismatch = mismatch.map(shownStatusMessage) {
            throw Failure(line: join.expectation.line ?? line, reason: mismatch, traceID: result.traceID)
        }
        try save(join.saves, from: outcome.responses.last, type: outcome.responseType, traceID: result.traceID)
    }

    /// Ends the spawned calls nobody joined (a run that failed before its `join`, a console closed): their nodes
    /// see them cancelled.
    func cancelSpawned() {
        for spawned in spawned.values { spawned.task.cancel() }
        spawned = [:]
    }
}
