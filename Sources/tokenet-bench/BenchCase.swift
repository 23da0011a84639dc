import Foundation

/// The measured cases, each mirroring one anchor case of ../shared/perf-anchors.
enum BenchCase: String, CaseIterable, Sendable {
    /// Sequential unary calls, 100-byte payloads (anchors: raw-tls `pingpong`, grpc-tls `unary-seq`).
    case pingpong
    /// 64 unary calls in flight on one connection (anchors: raw-tls `pipelined`, grpc-tls `unary-async` 64).
    case async64
    /// 16 KiB payloads, 8 calls in flight (anchors: raw-tls 16384 x 8, grpc-tls 16384 x 32).
    case bulk16k
    /// 16 KiB payloads, 32 calls in flight: the shape of the grpc-tls 16384 x 32 anchor.
    case bulk16k32
    /// Server streaming of 100-byte messages, 1000 per call.
    case stream
    /// Sequential 100-byte echoes over Tokenet's own TLS transport and event loop, without the RPC layer: the
    /// floor under `pingpong`, which tells the transport's share of its cost from the calls' (anchor: raw-tls
    /// `pingpong`).
    case transport

    var mode: String {
        switch self {
        case .pingpong: "unary-seq"
        case .async64, .bulk16k, .bulk16k32: "unary-async"
        case .stream: "server-stream"
        case .transport: "transport-echo"
        }
    }

    var size: Int { self == .bulk16k || self == .bulk16k32 ? 16384 : 100 }

    var inflight: Int {
        switch self {
        case .pingpong: 1
        case .async64: 64
        case .bulk16k: 8
        case .bulk16k32: 32
        case .stream, .transport: 1
        }
    }
}

/// The figures of one case, printed in the anchors' `RESULT` line format and table columns.
struct BenchResult: Sendable {
    /// `tokenet`, or `tokenet-nopoll` when the event loops sleep as soon as they run out of work.
    let impl: String
    let benchCase: BenchCase
    let messages: Int
    let seconds: Double
    /// Nanoseconds from send start to the complete reply, sorted; empty where latency is not meaningful.
    let latencies: [UInt64]
    /// CPU seconds both processes used in the measured window (client only when the server is elsewhere).
    let cpuSeconds: Double?

    var rate: Double { Double(messages) / seconds }
    var megabytesPerSecond: Double { rate * Double(benchCase.size) / 1e6 }

    func percentile(_ fraction: Double) -> Double? {
        guard !latencies.isEmpty else { return nil }
        return Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))]) / 1e3
    }

    var resultLine: String {
        let p50 = percentile(0.5).map { String(format: "%.1f", $0) } ?? "-"
        let p99 = percentile(0.99).map { String(format: "%.1f", $0) } ?? "-"
        return "RESULT impl=\(impl) mode=\(benchCase.mode) size=\(benchCase.size) conns=1 "
            + "inflight=\(benchCase.inflight) msgs=\(messages) secs=\(String(format: "%.1f", seconds)) "
            + "rate_per_s=\(String(format: "%.0f", rate)) MB_per_s=\(String(format: "%.2f", megabytesPerSecond)) "
            + "p50_us=\(p50) p99_us=\(p99) cpu_us_per_msg=\(cpuPerMessage.map { String(format: "%.1f", $0) } ?? "-")"
    }

    /// CPU microseconds per message, both ends together: unlike the rates, it hardly depends on other load.
    var cpuPerMessage: Double? {
        guard let cpuSeconds, messages > 0 else { return nil }
        return cpuSeconds * 1e6 / Double(messages)
    }

    static let tableHeader = row(
        "impl", "mode", "size", "conns", "inflight", "rate/s", "MB/s", "p50_us", "p99_us", "cpu_us/msg")

    var tableRow: String {
        Self.row(
            impl, benchCase.mode, "\(benchCase.size)", "1", "\(benchCase.inflight)",
            String(format: "%.0f", rate), String(format: "%.2f", megabytesPerSecond),
            percentile(0.5).map { String(format: "%.1f", $0) } ?? "-",
            percentile(0.99).map { String(format: "%.1f", $0) } ?? "-",
            cpuPerMessage.map { String(format: "%.1f", $0) } ?? "-")
    }

    /// The column widths of the anchors' table, but for `impl`, wide enough for `tokenet-nopoll-deadline`.
    private static func row(_ columns: String...) -> String {
        let widths = [-23, -19, 6, 5, 8, 10, 8, 9, 9, 11]
        return zip(columns, widths).map { column, width in
            let padding = String(repeating: " ", count: max(0, abs(width) - column.count))
            return width < 0 ? column + padding : padding + column
        }.joined(separator: " ")
    }
}

/// Monotonic nanoseconds; cheaper than `ContinuousClock` arithmetic inside the measured loops.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
