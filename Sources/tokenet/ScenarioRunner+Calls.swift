import Foundation
import TokenetNode
import TokenetRPC
import TokenetScenario
import TokenetWire

/// One `call` step: the request filled in and encoded as the node's reflection says, the call made as the operator,
/// and its outcome (status and responses as JSON) for the expectation to judge.
extension ScenarioRunner {
    struct CallResult {
        var outcome: ScenarioExpectation.Outcome
        var traceID: String
        var elapsed: Duration
    }

    /// `message`, of a call to `party` that ended `code`, with the way back named when a step stopped or killed its
    /// node: a step, not the address the transport's hint names ("start the node, or give the address it listens
    /// on").
    func namingTheStartStep(_ message: String, code: StatusCode, party: ScenarioParty) -> String {
        guard code == .unavailable, let nodes, !nodes.up.contains(party) else { return message }
        let hint = "; the \(party)-node is not running: a 'start \(party)' step starts it again"
        return message.contains(InspectSession.startTheNodeHint)
            ? message.replacingOccurrences(of: InspectSession.startTheNodeHint, with: hint) : message + hint
    }

    /// Makes the call once. A node that cannot be reached is an UNAVAILABLE outcome (what a script expects of a
    /// stopped node or a refused link); a request that does not fit its type is an error of the script.
    /// `deadline` bounds this call instead of the script's deadline (a `within` that ends sooner).
    func makeCall(_ call: ScenarioCall, line: Int, deadline: Duration? = nil) throws -> CallResult {
        let (path, texts, prepared, traceID) = try prepare(call.party, call.method, call.request, line: line)
        let callOptions =
            deadline.map { deadline in
                var bounded = prepared
                bounded.deadline = deadline
                return bounded
            } ?? prepared
        let started = ContinuousClock.now
        let interruption = self.interruption
        let result = Self.interruptible(line: line, interruption: interruption) {
            await Self.call(path: path, texts: texts, options: callOptions, traceID: traceID, line: line)
        }
        switch result {
        case .success(var outcome):
            outcome.message = namingTheStartStep(outcome.message, code: outcome.code, party: call.party)
            return CallResult(outcome: outcome, traceID: traceID, elapsed: ContinuousClock.now - started)
        case .failure(let error):
            try interruption.check()
            // A request that does not fit its type, or a method the node does not describe: the line is wrong.
            throw Failure(line: line, reason: error.message, scriptError: error.code == .usage, traceID: traceID)
        }
    }

    /// Waits for `work` from the runner's thread; Ctrl-C ends the wait at once (the work is cancelled), rather
    /// than after the call's deadline.
    static func interruptible(
        line: Int, interruption: DemoInterruption,
        _ work: @escaping @Sendable () async -> Result<ScenarioExpectation.Outcome, CLIError>
    ) -> Result<ScenarioExpectation.Outcome, CLIError> {
        runBlocking {
            await withTaskGroup(of: Result<ScenarioExpectation.Outcome, CLIError>?.self) { group in
                group.addTask { await work() }
                group.addTask {
                    while !Task.isCancelled {
                        do throws(CLIError) {
                            try interruption.check()
                        } catch {
                            return .failure(error)
                        }
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first ?? .failure(CLIError(.node, "line \(line): the call ended without an outcome"))
            }
        }
    }

    /// What a call or a watch needs: the method's wire path, the request texts with `${NAME}`s filled in, the
    /// connection options (identity, deadline, headers) and a trace id (the script's own `header` one, if any).
    /// Whether the `.proto` declares that `method` (as a script names it) changes nothing (`option
    /// idempotency_level = NO_SIDE_EFFECTS`); false for a method this build does not know.
    static func changesNothing(_ method: String) -> Bool {
        guard let path = try? CallCommand.methodPath(method) else { return false }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 2,
            let service = ProtoRegistry.services.first(where: { $0.name == String(parts[0]) }),
            let found = service.method(named: String(parts[1]))
        else { return false }
        return found.hasNoSideEffects
    }

    func prepare(_ party: ScenarioParty, _ method: String, _ request: String, line: Int) throws
        -> (path: String, texts: [String], options: InspectOptions, traceID: String)
    {
        let path: String
        let texts: [String]
        do {
            path = try CallCommand.methodPath(method)
            texts = try JSONTexts.split(try variables.fill(request, inJSON: true))
        } catch let error as ScenarioError {
            throw Failure(line: line, reason: error.message, scriptError: true)
        } catch let error as CLIError {
            throw Failure(line: line, reason: error.message, scriptError: true)
        }
        var options = InspectOptions(
            identity: identity, at: addresses[party]!, pkiDirectory: pki.path, deadline: deadline)
        options.metadata = headers
        return (path, texts, options, headers.traceID ?? Metadata.newTraceID())
    }

    static func call(
        path: String, texts: [String], options: InspectOptions, traceID: String, line: Int
    ) async -> Result<ScenarioExpectation.Outcome, CLIError> {
        let session: InspectSession
        do {
            session = try await InspectSession.connect(options)
        } catch let error as RPCError {
            return .success(.init(code: error.code, message: error.message, responses: []))
        } catch {
            return .success(.init(code: .unavailable, message: "\(error)", responses: []))
        }
        var callOptions = session.callOptions
        callOptions.metadata.setTraceID(traceID)
        let collector = ResponseCollector()
        let result: Result<ScenarioExpectation.Outcome, CLIError>
        var responseType: (any ProtoMessage.Type)?
        do {
            guard let target = try await CallTarget.resolve(path, session: session) else {
                // Not described by the node: open the call without a request, so the node's own answer
                // (UNIMPLEMENTED) is the outcome, and nothing runs with a request of a guessed type.
                _ = try await session.client.clientStreaming(path: path, requests: [], options: callOptions)
                throw CLIError(.usage, "\(path) answered, but the node's reflection service does not describe it")
            }
            responseType = target.response
            let requests: [Data]
            requests = try CallCommand.encode(texts, as: target, from: "the line")
            try await collect(target, requests, callOptions, session.client, into: collector)
            result = .success(
                .init(code: .ok, message: "", responses: collector.responses, responseType: target.response))
        } catch let error as RPCError {
            // Another kind of node at the party's address (`--wallet` given the TSP's) is named, as party commands
            // name it, instead of the node's bare "unknown method".
            let error = await session.wrongNode(behind: error) ?? error
            result = .success(
                .init(
                    code: error.code, message: error.message, responses: collector.responses,
                    responseType: responseType))
        } catch let error as CLIError {
            result = .failure(error)
        } catch {
            result = .success(.init(code: .unknown, message: "\(error)", responses: collector.responses))
        }
        await session.close()
        return result
    }

    private static func collect(
        _ target: CallTarget, _ requests: [Data], _ options: CallOptions, _ client: RPCClient,
        into collector: ResponseCollector
    ) async throws {
        switch target.kind {
        case .unary:
            try collector.add(try await client.unary(path: target.path, request: requests[0], options: options), target)
        case .clientStreaming:
            try collector.add(
                try await client.clientStreaming(path: target.path, requests: requests, options: options), target)
        case .serverStreaming:
            for try await response in try await client.serverStreaming(
                path: target.path, request: requests[0], options: options)
            {
                try collector.add(response, target)
            }
        case .bidirectionalStreaming:
            for try await response in try await client.bidirectional(
                path: target.path, requests: requests, options: options)
            {
                try collector.add(response, target)
            }
        }
    }
}

/// The responses of one call as JSON, kept when the call then fails (a stream that ends with a deadline).
final class ResponseCollector: @unchecked Sendable {
    // Filled by the one task that makes the call, read after it returns.
    private(set) var responses: [JSONValue] = []

    func add(_ data: Data, _ target: CallTarget) throws {
        let message: any ProtoMessage
        do {
            message = try target.response.init(serializedBytes: data)
        } catch let error as WireError {
            throw RPCError(.internal, "the response is not a valid \(target.response.protoName): \(error.message)")
        }
        responses.append(try JSONValue(parsing: try message.jsonString()))
    }
}
