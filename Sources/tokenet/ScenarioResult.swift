import Foundation

/// How one scenario ended, for the summary line and the JUnit report (`--junit`).
struct ScenarioResult {
    var source: String
    /// 0 passed, 1 a step or node failed, 2 the script was wrong.
    var status: Int32
    /// The one-line reason (`FAILED at line 12: …`), nil when it passed.
    var failure: String?
    /// More for a person: what the nodes logged for the failed call's trace.
    var details: String?
    var seconds: Double
    /// A scenario an interruption kept from running: a `skipped` test case, so that the report still names it.
    var skipped = false

    init(source: String, status: Int32, failure: String?, details: String?, since started: ContinuousClock.Instant) {
        self.source = source
        self.status = status
        self.failure = failure
        self.details = details
        let elapsed = (ContinuousClock.now - started).components
        seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    /// A scenario that did not run, because `reason` (an interruption) ended the run before it.
    static func notRun(_ source: String, reason: String) -> ScenarioResult {
        var result = ScenarioResult(
            source: source, status: 0, failure: reason, details: nil, since: ContinuousClock.now)
        result.seconds = 0
        result.skipped = true
        return result
    }

    /// JUnit XML as CI systems read it: one test case per scenario file; a step that went otherwise is a
    /// `failure`, a script that is wrong an `error`, one an interruption kept from running `skipped`.
    static func junit(_ results: [ScenarioResult]) -> String {
        let failures = results.filter { !$0.skipped && $0.status == 1 }.count
        let errors = results.filter { !$0.skipped && $0.status == 2 }.count
        let skipped = results.filter(\.skipped).count
        let total = String(format: "%.3f", results.reduce(0) { $0 + $1.seconds })
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        let counts =
            #"tests="\#(results.count)" failures="\#(failures)" errors="\#(errors)" skipped="\#(skipped)" "#
            + #"time="\#(total)""#
        xml += #"<testsuites name="tokenet scenario" \#(counts)>"# + "\n"
        xml += #"  <testsuite name="tokenet scenario" \#(counts)>"# + "\n"
        for result in results {
            let name = escape(result.source)
            let time = String(format: "%.3f", result.seconds)
            xml += #"    <testcase classname="tokenet.scenario" name="\#(name)" time="\#(time)""#
            guard let failure = result.failure else {
                xml += "/>\n"
                continue
            }
            if result.skipped {
                xml += ">\n"
                xml += #"      <skipped message="\#(escape(failure))"/>"# + "\n"
                xml += "    </testcase>\n"
                continue
            }
            let element = result.status == 2 ? "error" : "failure"
            let body = escape([failure, result.details].compactMap { $0 }.joined(separator: "\n"))
            xml += ">\n"
            xml += #"      <\#(element) message="\#(escape(failure))">\#(body)</\#(element)>"# + "\n"
            xml += "    </testcase>\n"
        }
        xml += "  </testsuite>\n</testsuites>\n"
        return xml
    }

    /// Refuses a `--junit` path the report could not be written to — a folder, or a file in a folder that does not
    /// exist or cannot be written — before any node starts: found after the run, it failed a run that had passed.
    static func checkJUnitPath(_ path: String) throws(CLIError) {
        let files = FileManager.default
        var isFolder: ObjCBool = false
        if files.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            throw CLIError(
                .usage, "scenario: --junit \(path) is a folder; name the report's file, such as \(path)/junit.xml")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard files.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw CLIError(.usage, "scenario: --junit \(path): the folder \(folder) does not exist")
        }
        // Written as the report will be, beside it and renamed: a folder the permission bits allow but that takes
        // no file (/proc, a read-only mount, a full disk) passed a permission check, and the run only failed at its
        // end, its scenarios run and passed.
        let probe = URL(fileURLWithPath: folder).appendingPathComponent(
            ".tokenet-junit-check-\(ProcessInfo.processInfo.processIdentifier)")
        do {
            try Data().write(to: probe, options: .withoutOverwriting)
            try? files.removeItem(at: probe)
        } catch {
            throw CLIError(
                .usage, "scenario: --junit \(path): the folder \(folder) cannot be written to",
                cause: DemoCause(error))
        }
    }

    static func writeJUnit(_ results: [ScenarioResult], to path: String) throws(CLIError) {
        do {
            try Data(junit(results).utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw CLIError(.setup, "scenario: cannot write the JUnit report to \(path)", cause: DemoCause(error))
        }
    }

    /// Text safe in XML content and attributes; control characters XML 1.0 cannot hold become U+FFFD.
    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n", "\t", "\r": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value): out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
