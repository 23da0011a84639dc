import Foundation
import Testing
import TokenetTestSupport

/// `--deadline` bounds the whole command, reading `-d @` included: standard input whose writer holds it open (a
/// pipe from a process that hangs) ends the command at the deadline with DEADLINE_EXCEEDED, as a call that takes
/// too long does. It read until the writer went away, however long that took.
@Suite struct CallStandardInputDeadlineTests {
    @Test(.timeLimit(.minutes(3))) func standardInputThatDoesNotEndRunsIntoTheDeadline() async throws {
        let pipe = Pipe()
        try pipe.fileHandleForWriting.write(contentsOf: Data("{}".utf8))
        // Nothing listens on port 1: the command must end before it tries to connect.
        let started = ContinuousClock.now
        let reading = pipe.fileHandleForReading
        let result = try await offThePool {
            try runTokenet(
                [
                    "call", "127.0.0.1:1", "tokenet.health.v1.Health/Check", "-d", "@", "--deadline", "1s",
                    "--plaintext",
                ], standardInput: reading) as ProcessResult
        }
        let took = ContinuousClock.now - started
        try pipe.fileHandleForWriting.close()
        #expect(result.status == 64 + 4, "\(result.stderr)")
        #expect(
            result.stderr
                == "ERROR: DEADLINE_EXCEEDED: the command's deadline of 1000 ms ran out while reading the request from "
                + "standard input (it had not ended)\n")
        // Far past the 1 s: the writer stays open until the command ends, so reading to its end would hang until
        // the time limit; a stalled, loaded machine once took 36 s to run the command.
        #expect(took < .seconds(90), "\(took)")
    }
}
