import Foundation
import TokenetTransport

/// `tokenet-bench compare`: one sitting of anchors and Tokenet, placed the same way on the CPUs, for each pinning
/// asked for. Per pinning and round it runs the anchors' `run.sh` (with `PIN=`), then `tokenet-bench run --pin`
/// in a child process, takes the median of the rounds and prints Markdown tables ready for the README: the
/// side-by-side figures and the issue's targets as ratios.
///
/// Tokenet runs twice per round: as the nodes run (event loops poll briefly before sleeping) and with
/// `--idle-poll-us 0` for ping-pong and 64 in flight (`tokenet-nopoll`), whose loops sleep in `epoll_wait` as the
/// anchors' threads sleep in `read` — the like-for-like measure of the runtime's own cost. With `--deadline-ms N`
/// it runs ping-pong and 64 in flight a third time with every call carrying that deadline (`tokenet-deadline`),
/// as the nodes' calls to each other do, and adds their targets.
struct BenchCompare {
    let options: BenchOptions

    /// One `RESULT` line: `key=value` fields.
    struct Line {
        let fields: [String: String]

        init?(_ text: Substring) {
            guard text.hasPrefix("RESULT ") else { return nil }
            var fields: [String: String] = [:]
            for pair in text.dropFirst(7).split(separator: " ") {
                guard let equals = pair.firstIndex(of: "=") else { continue }
                fields[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
            }
            self.fields = fields
        }

        var key: Key { Key(fields["impl"] ?? "", fields["mode"] ?? "", fields["size"] ?? "", fields["inflight"] ?? "") }
        func number(_ name: String) -> Double? { fields[name].flatMap(Double.init) }
    }

    struct Key: Hashable {
        let impl: String
        let mode: String
        let size: String
        let inflight: String

        init(_ impl: String, _ mode: String, _ size: String, _ inflight: String) {
            self.impl = impl
            self.mode = mode
            self.size = size
            self.inflight = inflight
        }
    }

    /// The rows of the README table, in order: each Tokenet case after the anchors it is compared with.
    static let rows: [Key] = [
        Key("raw-tls", "pingpong", "100", "1"), Key("grpc-tls", "unary-seq", "100", "1"),
        Key("tokenet", "unary-seq", "100", "1"), Key("tokenet-nopoll", "unary-seq", "100", "1"),
        Key("tokenet-deadline", "unary-seq", "100", "1"),
        Key("raw-tls", "pipelined", "100", "32"), Key("grpc-tls", "unary-async", "100", "64"),
        Key("tokenet", "unary-async", "100", "64"), Key("tokenet-nopoll", "unary-async", "100", "64"),
        Key("tokenet-deadline", "unary-async", "100", "64"),
        Key("raw-tls", "pipelined", "16384", "8"), Key("grpc-tls", "unary-async", "16384", "32"),
        Key("tokenet", "unary-async", "16384", "8"), Key("tokenet", "unary-async", "16384", "32"),
        Key("tokenet", "server-stream", "100", "1"),
        Key("tokenet", "transport-echo", "100", "1"), Key("tokenet-nopoll", "transport-echo", "100", "1"),
    ]

    func run() async throws {
        let anchors = options.anchors ?? "/work/shared/perf-anchors"
        let runScript = (anchors as NSString).appendingPathComponent("run.sh")
        guard FileManager.default.fileExists(atPath: runScript) else {
            throw BenchError("no \(runScript) (pass --anchors DIR)")
        }
        let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var sections: [String] = []
        var verdicts: [(BenchOptions.Pinning, [Key: Double], [Key: Double], [Key: Double])] = []
        for pin in options.pins {
            var lines: [Line] = []
            var loads: [String] = []
            for round in 1...options.rounds {
                loads.append(Self.loadAverage())
                log("pin \(pin.rawValue), round \(round): anchors")
                lines += try Self.results(
                    of: "/bin/bash", [runScript],
                    environment: ["PIN": pin.rawValue, "SECS": "\(options.seconds)", "WARMUP": "\(options.warmup)"])
                log("pin \(pin.rawValue), round \(round): tokenet")
                lines += try Self.results(
                    of: me,
                    ["run", "--pin", pin.rawValue, "--seconds", "\(options.seconds)", "--warmup", "\(options.warmup)"],
                    environment: ["OPENSSL_CONF": (anchors as NSString).appendingPathComponent("openssl-aes128.cnf")])
                log("pin \(pin.rawValue), round \(round): tokenet, loops sleeping at once")
                lines += try Self.results(
                    of: me,
                    [
                        "run", "--pin", pin.rawValue, "--seconds", "\(options.seconds)", "--warmup",
                        "\(options.warmup)",
                        "--idle-poll-us", "0", "--cases", "pingpong,async64,transport",
                    ],
                    environment: ["OPENSSL_CONF": (anchors as NSString).appendingPathComponent("openssl-aes128.cnf")])
                if let deadline = options.deadlineMilliseconds {
                    log("pin \(pin.rawValue), round \(round): tokenet, calls with a \(deadline) ms deadline")
                    lines += try Self.results(
                        of: me,
                        [
                            "run", "--pin", pin.rawValue, "--seconds", "\(options.seconds)", "--warmup",
                            "\(options.warmup)", "--deadline-ms", "\(deadline)", "--cases", "pingpong,async64",
                        ],
                        environment: [
                            "OPENSSL_CONF": (anchors as NSString).appendingPathComponent("openssl-aes128.cnf")
                        ])
                }
            }
            loads.append(Self.loadAverage())
            let rate = Self.medians(lines, "rate_per_s")
            let p50 = Self.medians(lines, "p50_us")
            let megabytes = Self.medians(lines, "MB_per_s")
            let p99 = Self.medians(lines, "p99_us")
            let cpu = Self.medians(lines, "cpu_us_per_msg")
            var table = [
                "`--pin \(pin.rawValue)` / `PIN=\(pin.rawValue)` — \(Self.timestamp()) UTC, median of "
                    + "\(options.rounds) round(s), load average (1 min) \(loads.joined(separator: " → ")):",
                "",
                "| impl | mode | size | in flight | rate/s | MB/s | p50_us | p99_us | cpu_us/msg |",
                "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
            for key in Self.rows where rate[key] != nil {
                func cell(_ values: [Key: Double], _ format: String) -> String {
                    values[key].map { String(format: format, $0) } ?? ""
                }
                table.append(
                    "| \(key.impl) | \(key.mode) | \(key.size) | \(key.inflight) | \(cell(rate, "%.0f")) | "
                        + "\(cell(megabytes, "%.2f")) | \(cell(p50, "%.1f")) | \(cell(p99, "%.1f")) | "
                        + "\(cell(cpu, "%.1f")) |")
            }
            sections.append(table.joined(separator: "\n"))
            verdicts.append((pin, rate, p50, megabytes))
            print(sections.last!, "\n")
        }
        print(Self.targets(verdicts))
    }

    private func log(_ text: String) {
        FileHandle.standardError.write(Data("tokenet-bench compare: \(text)\n".utf8))
    }

    /// The issue's targets as ratios, one column per pinning.
    static func targets(_ runs: [(BenchOptions.Pinning, [Key: Double], [Key: Double], [Key: Double])]) -> String {
        let tokenet16k = Key("tokenet", "unary-async", "16384", "32")
        let tokenet16k8 = Key("tokenet", "unary-async", "16384", "8")
        let grpc16k = Key("grpc-tls", "unary-async", "16384", "32")
        typealias Target = (name: String, atLeast: Bool, goal: Double, ratio: (Int) -> Double?)
        func ratio(
            _ values: KeyPath<(BenchOptions.Pinning, [Key: Double], [Key: Double], [Key: Double]), [Key: Double]>,
            _ ours: Key, _ theirs: Key
        ) -> (Int) -> Double? {
            { index in
                guard let a = runs[index][keyPath: values][ours], let b = runs[index][keyPath: values][theirs], b > 0
                else { return nil }
                return a / b
            }
        }
        /// The ping-pong and 64-in-flight targets for one of Tokenet's rows: polling loops, or sleeping ones.
        func callTargets(_ impl: String, label: String) -> [Target] {
            let sequential = Key(impl, "unary-seq", "100", "1")
            let inFlight = Key(impl, "unary-async", "100", "64")
            return [
                (
                    label + "ping-pong p50 within 1.3x of raw-tls pingpong", false, 1.3,
                    ratio(\.2, sequential, Key("raw-tls", "pingpong", "100", "1"))
                ),
                (
                    label + "ping-pong calls/s at least 1.5x grpc-tls unary-seq", true, 1.5,
                    ratio(\.1, sequential, Key("grpc-tls", "unary-seq", "100", "1"))
                ),
                (
                    label + "64 in flight at least 2x grpc-tls unary-async 64", true, 2,
                    ratio(\.1, inFlight, Key("grpc-tls", "unary-async", "100", "64"))
                ),
                (
                    label + "64 in flight at least 0.5x raw-tls pipelined (32)", true, 0.5,
                    ratio(\.1, inFlight, Key("raw-tls", "pipelined", "100", "32"))
                ),
            ]
        }
        let withDeadlines = runs.contains { $0.1[Key("tokenet-deadline", "unary-seq", "100", "1")] != nil }
        let targets: [Target] =
            callTargets("tokenet", label: "") + callTargets("tokenet-nopoll", label: "nopoll: ")
            + (withDeadlines ? callTargets("tokenet-deadline", label: "deadline: ") : []) + [
                ("16 KiB MB/s at least 2x grpc-tls (both 32 in flight)", true, 2, ratio(\.3, tokenet16k, grpc16k)),
                ("(16 KiB with 8 in flight, as raw-tls, vs grpc-tls 32)", true, 2, ratio(\.3, tokenet16k8, grpc16k)),
            ]
        var lines = [
            "| target | " + runs.map { $0.0.rawValue }.joined(separator: " | ") + " |",
            "| --- |" + String(repeating: " ---: |", count: runs.count),
        ]
        for target in targets {
            let cells = runs.indices.map { index -> String in
                guard let value = target.ratio(index) else { return "-" }
                let isMet = { (ratio: Double) in target.atLeast ? ratio >= target.goal : ratio <= target.goal }
                return "\(ratioText(value, isMet: isMet))x \(isMet(value) ? "met" : "no")"
            }
            lines.append("| \(target.name) | " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    /// Two decimals, or as many more as it takes for the printed figure to fall on the same side of the goal as
    /// the value itself (1.996 against "at least 2" prints as 1.996, not as a 2.00 that reads as met).
    static func ratioText(_ value: Double, isMet: (Double) -> Bool) -> String {
        for decimals in 2...5 {
            let text = String(format: "%.\(decimals)f", value)
            if let shown = Double(text), isMet(shown) == isMet(value) { return text }
        }
        return String(format: "%.6f", value)
    }

    static func medians(_ lines: [Line], _ field: String) -> [Key: Double] {
        Dictionary(grouping: lines, by: \.key).compactMapValues { group in
            let values = group.compactMap { $0.number(field) }.sorted()
            guard !values.isEmpty else { return nil }
            let middle = values.count / 2
            return values.count % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2
        }
    }

    /// Runs a command to its end and returns its `RESULT` lines; its other output goes to stderr.
    ///
    /// Started through `SpawnedProcess`, with every signal unblocked and at its default in the child: `Process` would
    /// pass on the signal mask of the calling thread, and the concurrency runtime's threads block SIGTERM, so the
    /// anchors' script could then never stop its servers with `kill`.
    static func results(of path: String, _ arguments: [String], environment: [String: String]) throws -> [Line] {
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let child = try SpawnedProcess(path, arguments, environment: merged, standardOutput: .pipe)
        let data = child.standardOutput?.readDataToEndOfFile() ?? Data()
        let termination = child.waitUntilExit()
        let status = termination.reason == .exit ? termination.status : 128 + termination.status
        FileHandle.standardError.write(data)
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap(Line.init)
        if status != 0 {
            // The anchors' script can fail in a late case (its plaintext ones, say) on a loaded machine; the
            // figures it printed before are still good, and missing ones show as empty cells.
            let failure = "\(path) \(arguments.joined(separator: " ")) failed (\(status))"
            guard !lines.isEmpty else { throw BenchError(failure) }
            FileHandle.standardError.write(
                Data("tokenet-bench compare: \(failure); using its \(lines.count) results\n".utf8))
        }
        return lines
    }

    static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init)
            ?? "?"
    }

    static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date())
    }
}
