import Foundation
import TokenetFaults
import TokenetNode
import TokenetRPC
import TokenetScenario
import TokenetWire

/// `watch` and `await`: streams kept open in the background while the script goes on, and waits for their messages.
extension ScenarioRunner {
    func openWatch(_ watch: ScenarioWatch, line: Int) throws {
        let (path, texts, callOptions, traceID) = try prepare(watch.party, watch.method, watch.request, line: line)
        let name = watch.name
        let opened: Result<ScenarioWatchStream, Failure> = runBlocking {
            do {
                return .success(
                    try await ScenarioWatchStream.open(
                        name: name, path: path, texts: texts, options: callOptions, traceID: traceID))
            } catch let error as CLIError {
                return .failure(
                    Failure(line: line, reason: error.message, scriptError: error.code == .usage, traceID: traceID))
            } catch {
                return .failure(Failure(line: line, reason: "watch \(name) did not open: \(error)", traceID: traceID))
            }
        }
        let stream = try opened.get()
        if let refused = runBlocking({ await stream.refusal(within: ScenarioWatchStream.refusalWait) }) {
            throw Failure(
                line: line,
                reason: "watch \(name) did not open: \(refused.code.name): \(shownStatusMessage(refused.message))",
                traceID: traceID)
        }
        // Watched again under its name (its node restarted, say): the earlier stream is closed, and awaits read the
        // new one from its first message.
        if let earlier = watches[name] {
            runBlocking { await earlier.close() }
            print(line, "watch \(name): the earlier watch of that name is closed")
        }
        watches[name] = stream
        taken[name] = 0
        print(line, "watch \(name): \(watch.party) \(watch.method) open (trace \(traceID))")
    }

    /// Looks through the messages the watch received since the last `await` took one, until one matches or the
    /// time runs out; the messages it passes over are taken too, so each `await` sees what came after.
    func runAwait(_ awaited: ScenarioAwait, line: Int) throws {
        guard let stream = watches[awaited.name] else {
            throw Failure(line: line, reason: "\(awaited.name) is not watched", scriptError: true)
        }
        var expected: JSONValue?
        if let contains = awaited.contains {
            do {
                let filled = try variables.fill(contains, inJSON: true)
                // A field the messages do not have would match every message (as its default): the line is wrong.
                try ScenarioExpectation.check(filled, fits: stream.responseType)
                expected = try ScenarioExpectation.object(filled).withIntegersAsNumbers(for: stream.responseType)
            } catch {
                throw Failure(
                    line: line, reason: error.message.replacing("expect OK", with: "await"), scriptError: true)
            }
        }
        let limit = awaited.within ?? deadline
        let started = ContinuousClock.now
        let before = taken[awaited.name] ?? 0
        var nearest: String?
        while true {
            let state = stream.snapshot
            let from = taken[awaited.name] ?? 0
            for index in from..<state.messages.count {
                let message = state.messages[index]
                guard let expected else { return try took(message, index, awaited, stream, line, started) }
                if let reason = message.withEnumDefaults(for: stream.responseType).mismatch(containing: expected) {
                    nearest = "message \(index + 1): \(shownStatusMessage(reason))"
                } else {
                    return try took(message, index, awaited, stream, line, started)
                }
            }
            taken[awaited.name] = state.messages.count
            let seen = state.messages.count
            if let end = state.end {
                let status =
                    end.message.isEmpty ? end.code.name : "\(end.code.name): \(shownStatusMessage(end.message))"
                // Only the messages after the last await's were looked at: "after 3 messages, none of them
                // matching" counted the ones earlier awaits had taken (and matched).
                let earlier = before == 1 ? "message 1" : "messages 1 to \(before)"
                let looked =
                    before == 0
                    ? ", none of them matching"
                    : seen == before
                        ? "; earlier awaits took \(earlier), and no message came after"
                        : "; earlier awaits took \(earlier), and none of the \(seen - before) after matched"
                throw Failure(
                    line: line,
                    reason: "watch \(awaited.name) ended after \(Self.messages(seen)) (\(status))\(looked)"
                        + (nearest.map { " (\($0))" } ?? ""), traceID: stream.traceID)
            }
            if ContinuousClock.now - started >= limit {
                throw Failure(
                    line: line,
                    reason: "no message of watch \(awaited.name) matched within \(FaultCommand.format(limit)) "
                        + "(\(seen - before) new, \(seen) in all" + (nearest.map { "; \($0)" } ?? "") + ")",
                    traceID: stream.traceID)
            }
            try sleep(.milliseconds(20))
        }
    }

    /// "1 message", "3 messages".
    static func messages(_ count: Int) -> String { count == 1 ? "1 message" : "\(count) messages" }

    private func took(
        _ message: JSONValue, _ index: Int, _ awaited: ScenarioAwait, _ stream: ScenarioWatchStream, _ line: Int,
        _ started: ContinuousClock.Instant
    ) throws {
        taken[awaited.name] = index + 1
        let waited = ContinuousClock.now - started
        print(line, "await \(awaited.name) -> message \(index + 1) (after \(DurationText.describe(waited)))")
        if verbose {
            printOut(message.text(indent: 2).split(separator: "\n").map { "          \($0)" }.joined(separator: "\n"))
        }
        lastResponse = (message, stream.traceID, stream.responseType)
        consoleCallNotMade = nil
        try save(awaited.saves, from: message, type: stream.responseType, traceID: stream.traceID)
    }

    func closeWatches() {
        let streams = Array(watches.values)
        watches = [:]
        guard !streams.isEmpty else { return }
        runBlocking {
            for stream in streams { await stream.close() }
        }
    }
}
