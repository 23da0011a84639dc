import Foundation
import Synchronization
import TokenetScenario
import TokenetTransport

extension UpCommand {
    /// Reads steps from standard input and runs each as it comes, until a stop signal. Lines are read on a thread
    /// of their own (a blocking read must not hold the thread that notices the signal); the console polls them.
    struct Console {
        let runner: ScenarioRunner

        private final class Lines: Sendable {
            let state = Mutex<(lines: [String], ended: Bool)>(([], false))
        }

        func run() throws(CLIError) {
            defer { runner.closeWatches() }
            let input = Lines()
            NamedThread.start("tokenet-up-console") {
                while let line = Swift.readLine(strippingNewline: true) {
                    input.state.withLock { $0.lines.append(line) }
                }
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
                for line in lines {
                    number += 1
                    do {
                        try runner.runAtConsole(try parser.read(line: line, number: number), line: number)
                    } catch let error as ScenarioError {
                        printOut("error: line \(error.message)")
                    } catch let error as ScenarioRunner.Failure {
                        printOut("error: line \(error.line): \(error.reason)")
                    } catch let error as CLIError where error.message.hasPrefix("interrupted by") {
                        throw error
                    } catch {
                        printOut("error: line \(number): \(error)")
                    }
                    if let nodes = runner.nodes { parser.nodesRunning(nodes.up) }
                    try runner.interruption.check()
                }
                if ended && !announcedEnd {
                    announcedEnd = true
                    printOut("(end of input: the nodes keep running until SIGINT or SIGTERM)")
                }
                usleep(50_000)
            }
        }
    }
}
