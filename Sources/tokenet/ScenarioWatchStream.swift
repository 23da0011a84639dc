import Foundation
import Synchronization
import TokenetNode
import TokenetRPC
import TokenetScenario
import TokenetWire

/// A stream a scenario keeps open in the background (`watch NAME PARTY METHOD`): its messages pile up here as JSON
/// while later steps run, and `await` lines look through them.
final class ScenarioWatchStream: Sendable {
    struct State {
        var messages: [JSONValue] = []
        /// How the stream ended, once it has.
        var end: ScenarioExpectation.Outcome?
    }

    let name: String
    let traceID: String
    /// The type of the stream's messages, which an `await` line's object is checked against.
    let responseType: any ProtoMessage.Type
    private let state = Mutex(State())
    private let reader = Mutex<Task<Void, Never>?>(nil)

    private init(name: String, traceID: String, responseType: any ProtoMessage.Type) {
        self.name = name
        self.traceID = traceID
        self.responseType = responseType
    }

    var snapshot: State { state.withLock { $0 } }

    /// Connects, checks that the method streams its responses, sends the request and starts collecting. Throws
    /// `CLIError(.usage)` for a watch the script got wrong (a unary method, a request that does not fit), and
    /// `RPCError` or `CLIError(.connection)` when the stream cannot be opened.
    static func open(
        name: String, path: String, texts: [String], options: InspectOptions, traceID: String
    ) async throws -> ScenarioWatchStream {
        let session = try await InspectSession.connect(options)
        let responses: RawResponseStream
        let target: CallTarget
        do {
            var callOptions = session.callOptions
            callOptions.timeout = nil
            callOptions.metadata.setTraceID(traceID)
            guard let resolved = try await CallTarget.resolve(path, session: session) else {
                throw await session.wrongNode(calling: path)
                    ?? RPCError(.unimplemented, "the node's reflection service does not describe \(path)")
            }
            target = resolved
            let requests = try CallCommand.encode(texts, as: target, from: "the line")
            switch target.kind {
            case .serverStreaming:
                responses = try await session.client.serverStreaming(
                    path: target.path, request: requests[0], options: callOptions)
            case .bidirectionalStreaming:
                responses = try await session.client.bidirectional(
                    path: target.path, requests: requests, options: callOptions)
            case .unary, .clientStreaming:
                throw CLIError(.usage, "watch \(name): \(path) answers once; call it instead")
            }
        } catch {
            await session.close()
            throw error
        }
        let stream = ScenarioWatchStream(name: name, traceID: traceID, responseType: target.response)
        stream.reader.withLock { reader in
            reader = Task {
                let end: ScenarioExpectation.Outcome
                do {
                    for try await data in responses {
                        let message = try target.response.init(serializedBytes: data)
                        let json = try JSONValue(parsing: try message.jsonString())
                        stream.state.withLock { $0.messages.append(json) }
                    }
                    end = .init(code: .ok, message: "", responses: [])
                } catch let error as RPCError {
                    end = .init(code: error.code, message: error.message, responses: [])
                } catch {
                    end = .init(code: .internal, message: "\(error)", responses: [])
                }
                stream.state.withLock { $0.end = end }
                await session.close()
            }
        }
        return stream
    }

    /// How long `open` waits for a refusal before it calls the watch open.
    static let refusalWait: Duration = .milliseconds(300)

    /// The stream's end, if it ended without a message within `limit` of now (a refusal: PERMISSION_DENIED, an
    /// unknown card); nil once a message came, or when it still runs. A refused watch was reported open, and only
    /// the next `await` on it said why.
    func refusal(within limit: Duration) async -> ScenarioExpectation.Outcome? {
        let giveUp = ContinuousClock.now + limit
        while true {
            let (messages, end) = state.withLock { ($0.messages.count, $0.end) }
            if messages > 0 { return nil }
            if let end { return end.code == .ok ? nil : end }
            guard ContinuousClock.now < giveUp else { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Cancels the stream (if it still runs) and waits for its connection to close.
    func close() async {
        guard let task = reader.withLock({ $0 }) else { return }
        task.cancel()
        _ = await waitAtMost(.seconds(5)) { await task.value }
    }
}
