import Foundation
import Synchronization
import TokenetNode
import TokenetScenario
import TokenetTransport

extension UpCommand {
    /// Reads steps from standard input and runs each as it comes, until a stop signal. Lines are read on a thread
    /// of their own (a blocking read must not hold the thread that notices the signal); the console polls them.
    struct Console {
        let runner: ScenarioRunner

        private final class Lines: Sendable {
            let state = Mutex<(lines: [Line], ended: Bool)>(([], false))
        }

        /// A line of standard input, or why it was skipped.
        enum Line: Sendable, Equatable {
            case text(String)
            case skipped(String)
        }

        /// The longest line the console takes: as much as a whole script file may hold.
        static let lineLimit = ScenarioCommand.scriptLimit

        /// Reads standard input line by line until its end, handing each line to `deliver`. `readLine` held a line
        /// whole however long it grew (a stream with no line break, `< /dev/zero`, until memory ran out) and took
        /// bytes that are not UTF-8 as U+FFFD: here a line stops being kept once it is over `limit` bytes, and
        /// either kind of line is skipped with the reason, so the console can say why and go on.
        static func readLines(descriptor: Int32 = 0, limit: Int = lineLimit, _ deliver: (Line) -> Void) {
            var line: [UInt8] = []
            var overLimit = false
            func append(_ bytes: UnsafeRawBufferPointer) {
                guard !overLimit else { return }
                if line.count + bytes.count > limit {
                    overLimit = true
                    line = []
                } else {
                    line.append(contentsOf: bytes)
                }
            }
            func finish() {
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                if overLimit {
                    let size = limit >= 1 << 20 ? "\(limit >> 20) MiB" : "\(limit >> 10) KiB"
                    deliver(.skipped("longer than \(size); skipped"))
                } else if let text = String(validating: line, as: UTF8.self) {
                    deliver(.text(text))
                } else {
                    deliver(.skipped("not UTF-8 text; skipped"))
                }
                line = []
                overLimit = false
            }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = chunk.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                chunk.withUnsafeBytes { buffer in
                    var start = 0
                    while start < count,
                        let found = memchr(buffer.baseAddress! + start, 0x0A, count - start)
                    {
                        let end = buffer.baseAddress!.distance(to: UnsafeRawPointer(found))
                        append(UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
                        finish()
                        start = end + 1
                    }
                    append(UnsafeRawBufferPointer(rebasing: buffer[start..<count]))
                }
            }
            if !line.isEmpty || overLimit { finish() }
        }

        func run() throws(CLIError) {
            defer {
                runner.cancelSpawned()
                runner.closeWatches()
            }
            let input = Lines()
            NamedThread.start("tokenet-up-console") {
                Self.readLines { line in input.state.withLock { $0.lines.append(line) } }
                input.state.withLock { $0.ended = true }
            }

            var parser = Scenario.Parser()
            var number = 0
            var announcedEnd = false
            while true {
                try runner.interruption.check()
                let (lines, ended) = input.state.withLock { state in
                    defer { state.lines = [] }
                    return (state.lines, state.ended)
                }
                for entry in lines {
                    number += 1
                    guard case .text(let line) = entry else {
                        if case .skipped(let reason) = entry { printOut("error: line \(number): \(reason)") }
                        continue
                    }
                    // Looked at before each line too: a node that ended on its own since the last line counts as
                    // down, so its `start` is not refused as "running".
                    if let nodes = runner.nodes { parser.nodesRunning(nodes.up) }
                    do {
                        let effect = try parser.read(line: line, number: number)
                        do {
                            try runner.runAtConsole(effect, line: number)
                        } catch let error as ScenarioRunner.Failure where error.scriptError {
                            // An expect line the run refuses (its object is no response of the call's type) is as
                            // if never typed, as one the parser refuses is: kept, it was the call's expect line, and
                            // the corrected one was refused as a second.
                            if case .expectation = effect { parser.withdrawExpectation() }
                            throw error
                        }
                    } catch let error as ScenarioError {
                        // The parser quotes the words it did not understand, and what is typed may hold a card number.
                        printOut("error: line \(maskPAN(error.message))")
                    } catch let error as ScenarioRunner.Failure {
                        printOut("error: line \(error.line): \(error.reason)")
                    } catch let error as CLIError where error.message.hasPrefix(DemoInterruption.messagePrefix) {
                        throw error
                    } catch {
                        printOut("error: line \(number): \(error)")
                    }
                    if let nodes = runner.nodes { parser.nodesRunning(nodes.up) }
                    try runner.interruption.check()
                }
                if let nodes = runner.nodes {
                    for line in nodes.endedNotByAStep() { printOut(line) }
                }
                if ended && !announcedEnd {
                    announcedEnd = true
                    printOut("(end of input: the nodes keep running until SIGINT, SIGTERM or SIGHUP)")
                }
                usleep(50_000)
            }
        }
    }
}
