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

    /// Makes the call once. A node that cannot be reached is an UNAVAILABLE outcome (what a script expects of a
    /// stopped node or a refused link); a request that does not fit its type is an error of the script.
    func makeCall(_ call: ScenarioCall, line: Int) throws(CLIError) -> CallResult {
        let request: String
        let path: String
        do {
            request = try variables.fill(call.request, line: line, inJSON: true)
            path = try CallCommand.methodPath(call.method)
        } catch let error as ScenarioError {
            throw CLIError(.usage, error.message)
        } catch let error as CLIError {
            throw CLIError(.usage, "line \(line): \(error.message)")
        } catch {
            throw CLIError(.usage, "line \(line): \(error)")
        }
        let texts: [String]
        do {
            texts = try JSONTexts.split(request)
        } catch {
            throw CLIError(.usage, "line \(line): \(error.message)")
        }
        let options = InspectOptions(
            operatorAt: nodes.listen[call.party]!, pkiDirectory: nodes.pki.path, deadline: deadline)
        let traceID = Metadata.newTraceID()
        let started = ContinuousClock.now
        let result: Result<ScenarioExpectation.Outcome, CLIError> = runBlocking {
            await Self.call(path: path, texts: texts, options: options, traceID: traceID, line: line)
        }
        return CallResult(outcome: try result.get(), traceID: traceID, elapsed: ContinuousClock.now - started)
    }

    private static func call(
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
        do {
            guard let target = try await CallTarget.resolve(path, session: session) else {
                // Not described by the node: open the call without a request, so the node's own answer
                // (UNIMPLEMENTED) is the outcome, and nothing runs with a request of a guessed type.
                _ = try await session.client.clientStreaming(path: path, requests: [], options: callOptions)
                throw CLIError(
                    .usage, "line \(line): \(path) answered, but the node's reflection service does not describe it")
            }
            let requests: [Data]
            do {
                requests = try CallCommand.encode(texts, as: target)
            } catch {
                throw CLIError(.usage, "line \(line): \(error.message)")
            }
            try await collect(target, requests, callOptions, session.client, into: collector)
            result = .success(.init(code: .ok, message: "", responses: collector.responses))
        } catch let error as RPCError {
            result = .success(.init(code: error.code, message: error.message, responses: collector.responses))
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
            for try await response in try client.serverStreaming(
                path: target.path, request: requests[0], options: options)
            {
                try collector.add(response, target)
            }
        case .bidirectionalStreaming:
            for try await response in try client.bidirectional(path: target.path, requests: requests, options: options)
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
