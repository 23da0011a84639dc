import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

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

    @Test(.timeLimit(.minutes(3))) func callsWithDeadlinesAreMeasuredAndLabelled() async throws {
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
    @Test(.timeLimit(.minutes(3))) func theTransportEchoIsMeasuredBesidePingPong() async throws {
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

    /// Options the benchmark cannot run as asked are bad options (status 2): `--cases ""` ran nothing and exited 0,
    /// `--seconds 1e9` (31 years) and `--seconds 0x10` (16) were taken.
    @Test(arguments: [
        (["--cases", ""], "--cases needs at least one case"),
        (["--cases", "pingpong,,stream"], "unknown case "),
        (["--seconds", "1e9"], "--seconds needs seconds from 0 to 86400, such as 5 or 0.5, not 1e9"),
        (["--seconds", "0x10"], "--seconds needs seconds from 0 to 86400, such as 5 or 0.5, not 0x10"),
        (["nonsense"], "unknown subcommand nonsense"),
    ])
    func optionsItCannotRunAsAskedAreRefused(arguments: [String], message: String) async throws {
        let result = try await LaunchedProcess.run("tokenet-bench", arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    /// Ctrl-C ended the benchmark alone: its server child, in a process group of its own, ran on to its lifetime
    /// (300 s) and its directory, with the PKI's CA key, stayed in $TMPDIR.
    @Test(.timeLimit(.minutes(3))) func anInterruptStopsTheServerAndRemovesTheDirectory() async throws {
        let scratch = try TemporaryDirectory()
        let bench = try SpawnedProcess(
            try BuiltExecutables.url(of: "tokenet-bench").path,
            ["--cases", "pingpong", "--seconds", "60", "--warmup", "0", "--pin", "none"],
            environment: ProcessInfo.processInfo.environment.merging(["TMPDIR": scratch.url.path]) { $1 },
            standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .file(scratch.path("stderr")))
        let directory = scratch.path("tokenet-bench-\(bench.pid)")
        func serverPIDs() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { entry in
                guard entry.allSatisfy(\.isNumber),
                    let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
                else { return false }
                let text = String(decoding: command, as: UTF8.self)
                return text.contains("\(directory)/tsp.pem") && text.contains("server")
            }
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while serverPIDs().isEmpty {
            try #require(ContinuousClock.now < deadline && bench.isRunning, "the bench's server never started")
            try await Task.sleep(for: .milliseconds(50))
        }
        bench.send(SIGINT)
        let termination = try await offThePool { bench.waitUntilExit(killingAfter: 30) }
        let stderr = (try? String(contentsOfFile: scratch.path("stderr"), encoding: .utf8)) ?? ""
        #expect(termination.reason == .exit && termination.status == 128 + SIGINT, "\(termination) \(stderr)")
        #expect(stderr.contains("tokenet-bench: stopped by SIGINT"), "\(stderr)")
        #expect(serverPIDs().isEmpty)
        #expect(
            !FileManager.default.fileExists(atPath: directory),
            "left behind: \((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []) \(stderr)")
    }
}
