import Foundation
import Testing

/// `tokenet-bench run` as a user runs it: a server process and a client over mutual TLS on loopback, briefly. A run
/// with the stream case measures each case for 3 s: with 0.3 s, and once with 1 s, a full test run on two busy CPUs
/// left the stream case's whole window without a completed stream (1,000 messages), and the row counted no message.
@Suite struct BenchCommandTests {
    /// The `RESULT` lines' fields, one dictionary per line.
    static func results(_ output: String) -> [[String: String]] {
        output.split(separator: "\n").filter { $0.hasPrefix("RESULT ") }.map { line in
            var fields: [String: String] = [:]
            for field in line.split(separator: " ").dropFirst() {
                let parts = field.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
            }
            return fields
        }
    }

    @Test(.timeLimit(.minutes(2))) func callsWithDeadlinesAreMeasuredAndLabelled() async throws {
        let result = try await LaunchedProcess.run(
            "tokenet-bench",
            ["run", "--seconds", "3", "--warmup", "0", "--cases", "pingpong,async64,stream", "--deadline-ms", "5000"])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = Self.results(result.stdout)
        #expect(rows.map { $0["mode"] } == ["unary-seq", "unary-async", "server-stream"])
        for row in rows {
            #expect(row["impl"] == "tokenet-deadline")
            #expect(Int(row["msgs"] ?? "") ?? 0 > 0, "\(row)")
        }
        #expect(result.stdout.contains("tokenet-deadline        unary-async"), "the table's columns line up")
    }

    /// The transport floor runs on the server's second port, and its echoes are checked like the calls'.
    @Test(.timeLimit(.minutes(2))) func theTransportEchoIsMeasuredBesidePingPong() async throws {
        let result = try await LaunchedProcess.run(
            "tokenet-bench", ["run", "--seconds", "1", "--warmup", "0", "--cases", "transport,pingpong"])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = Self.results(result.stdout)
        #expect(rows.map { $0["mode"] } == ["transport-echo", "unary-seq"])
        for row in rows {
            #expect(row["impl"] == "tokenet")
            #expect(Int(row["msgs"] ?? "") ?? 0 > 0, "\(row)")
            #expect(Double(row["p50_us"] ?? "") != nil, "\(row)")
        }
    }

    /// A microsecond holds no whole stream of 1,000 messages: the run says so and fails instead of printing a row
    /// of zeros that reads like a measurement.
    @Test func aCaseThatMeasuredNothingFailsTheRun() async throws {
        let result = try await LaunchedProcess.run(
            "tokenet-bench", ["run", "--seconds", "0.000001", "--warmup", "0", "--cases", "stream"])
        #expect(result.status == 1)
        #expect(!result.stdout.contains("RESULT "), "\(result.stdout)")
        #expect(
            result.stderr.contains("the stream case completed no message within its 1e-06 s window"), "\(result.stderr)"
        )
    }

    @Test func aDeadlineOutOfRangeIsRefused() async throws {
        let result = try await LaunchedProcess.run("tokenet-bench", ["run", "--deadline-ms", "0"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--deadline-ms needs milliseconds from 1 to 3600000, not 0"), "\(result.stderr)")
    }
}
