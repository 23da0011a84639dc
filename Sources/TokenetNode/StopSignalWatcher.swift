import Dispatch
import Foundation

/// Turns SIGTERM and SIGINT into a callback.
///
/// The default action of both signals is to kill the process, so they are ignored first and then observed with
/// `DispatchSourceSignal`: its handler runs on an ordinary queue, where it may log, lock and stop listeners, none of
/// which is allowed inside a raw signal handler.
public final class StopSignalWatcher: @unchecked Sendable {
    // Only `let` properties, set in init; DispatchSource is thread-safe for cancel().
    private let sources: [any DispatchSourceSignal]

    public static let stopSignals: [Int32] = [SIGTERM, SIGINT]

    public init(
        signals: [Int32] = StopSignalWatcher.stopSignals,
        queue: DispatchQueue = DispatchQueue(label: "tokenet.signals"),
        onSignal: @escaping @Sendable (Int32) -> Void
    ) {
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { onSignal(number) }
            source.resume()
            return source
        }
    }

    public func cancel() {
        for source in sources { source.cancel() }
    }

    /// `SIGTERM`, `SIGINT`, or the number for anything else.
    public static func name(of number: Int32) -> String {
        switch number {
        case SIGTERM: return "SIGTERM"
        case SIGINT: return "SIGINT"
        default: return "signal \(number)"
        }
    }
}
