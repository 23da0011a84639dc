import Foundation
import TokenetRPC

/// A small structured logger: a level threshold, text or JSON lines, `key=value` fields and an optional trace id.
///
/// It is a value type: `withTraceID(_:)` returns a copy that tags every line, so a call handler can log with its
/// trace id without any shared mutable state.
public struct Logger: Sendable {
    public var node: String
    public var level: LogLevel
    public var format: LogFormat
    public var traceID: String?
    private let sink: any LogSink
    let clock: @Sendable () -> Date

    public init(
        node: String, level: LogLevel = .info, format: LogFormat = .text, traceID: String? = nil,
        sink: any LogSink = StandardErrorSink(), clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.node = node
        self.level = level
        self.format = format
        self.traceID = traceID
        self.sink = sink
        self.clock = clock
    }

    public func withTraceID(_ traceID: String?) -> Logger {
        var copy = self
        copy.traceID = traceID
        return copy
    }

    public func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, String>) {
        guard isEnabled(level) else { return }
        let record = LogRecord(
            // Inside a call handler the served call's trace id applies, and in work done for a flow outside one
            // (`FlowTrace`) the flow's, so one flow reads as one trace in every node's log without threading the id
            // through each log call.
            timestamp: clock(), level: level, node: node, message: message(),
            traceID: traceID ?? FlowTrace.active,
            fields: fields.map { LogField($0.key, $0.value) }
        )
        sink.write(line: record.rendered(as: format))
    }

    /// `log(_:_:_:)` with fields made as the line is written.
    func log(_ level: LogLevel, _ message: String, fields: [LogField]) {
        guard isEnabled(level) else { return }
        let record = LogRecord(
            timestamp: clock(), level: level, node: node, message: message, traceID: traceID ?? FlowTrace.active,
            fields: fields)
        sink.write(line: record.rendered(as: format))
    }

    public func trace(_ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, String> = [:]) {
        log(.trace, message(), fields)
    }

    public func debug(_ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, String> = [:]) {
        log(.debug, message(), fields)
    }

    public func info(_ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, String> = [:]) {
        log(.info, message(), fields)
    }

    public func warning(_ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, String> = [:]) {
        log(.warning, message(), fields)
    }

    public func error(_ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, String> = [:]) {
        log(.error, message(), fields)
    }
}
