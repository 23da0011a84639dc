import TokenetRPC
import TokenetWire

/// Runs one party command over an `InspectSession`: connects as `tokenet call` does, gives the call a fresh trace
/// id (printed with the result, to find the flow in the nodes' logs), and prints the response as text or JSON.
enum PartySession {
    /// Without `--deadline`, a party command waits at most this long: the flows behind it cross three nodes.
    static let defaultDeadline = Duration.seconds(30)

    /// `exitStatus` gives the status of an answer that holds results of its own (a batch, one result per token):
    /// 0 unless the answer says something was refused.
    static func run<Response: ProtoMessage>(
        _ options: InspectOptions, json: Bool,
        call: @escaping @Sendable (InspectSession, CallOptions) async throws -> Response,
        text: @escaping @Sendable (Response, _ traceID: String) -> String,
        exitStatus: @escaping @Sendable (Response) -> Int32 = { _ in 0 }
    ) throws(CLIError) -> Int32 {
        var options = options
        options.deadline = options.deadline ?? defaultDeadline
        return try InspectSession.run(options, tracedFailures: true) { session in
            let (response, traceID) = try await traced(session) { try await call(session, $0) }
            printOut(json ? try response.jsonString(options: .pretty) : text(response, traceID))
            return exitStatus(response)
        }
    }

    /// Calls `body` with the session's call options plus a new trace id, and returns that id with the response.
    static func traced<Response>(
        _ session: InspectSession, _ body: (CallOptions) async throws -> Response
    ) async throws -> (Response, String) {
        var callOptions = session.callOptions
        let traceID = callOptions.metadata.traceID ?? Metadata.newTraceID()
        callOptions.metadata.setTraceID(traceID)
        return (try await body(callOptions), traceID)
    }
}
