/// The trace id of the flow that work outside any call handler belongs to: a notification's handling, or what a
/// node does in the background because of a change a call made (the payment keys a token gets once it is active).
///
/// Inside a handler the served call's trace id applies (`ServerContext.current`); elsewhere the calls a task makes,
/// and the lines it logs, take this one, so that one flow reads as one trace id in every node's log, across a
/// push as across a call. Set it with `FlowTrace.$current.withValue(id) { ... }`; nil (or empty) means none, and a
/// call then starts a trace of its own.
public enum FlowTrace {
    @TaskLocal public static var current: String?

    /// The trace id the current task works under: the served call's, else `current`; nil outside both.
    public static var active: String? {
        ServerContext.current?.traceID ?? flow
    }

    /// `current` unless it is empty.
    static var flow: String? {
        guard let current, !current.isEmpty else { return nil }
        return current
    }

    /// Runs `body` under a trace of its own: background work that no call set going (a registration, a catch-up
    /// at start), whose lines on this node and whose calls' lines on the peer then share one id.
    public static func runAsNewFlow<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        try await $current.withValue(Metadata.newTraceID(), operation: body, isolation: isolation)
    }

    /// Runs `body` under `traceID` (as `current`), or under the trace it already has when `traceID` is empty:
    /// messages that carry no trace id (the TSP's own timers, older senders) start none.
    /// A trace id that is not one (a peer's mistake) is ignored: calls made under it would be refused.
    public static func run<T>(
        _ traceID: String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        guard !traceID.isEmpty, Metadata.isValidTraceID(traceID) else { return try await body() }
        return try await $current.withValue(traceID, operation: body, isolation: isolation)
    }
}
