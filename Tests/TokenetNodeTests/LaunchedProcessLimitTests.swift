import Foundation
import Testing
import TokenetTransport

/// A child killed at its time limit takes what it started with it: the nodes a script starts outlived the script.
struct LaunchedProcessLimitTests {
    @Test(.timeLimit(.minutes(3))) func aChildKilledAtItsLimitTakesItsOwnChildrenWithIt() async throws {
        let scratch = try TemporaryDirectory()
        let pidFile = scratch.path("grandchild.pid")
        let child = try LaunchedProcess(
            executable: URL(fileURLWithPath: "/bin/sh"), ["-c", "sleep 600 & echo $! > \(pidFile); wait"])
        var grandchild: Int32?
        for _ in 0..<3_000 where grandchild == nil {
            let text = (try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? ""
            grandchild = text.hasSuffix("\n") ? Int32(text.dropLast()) : nil
            if grandchild == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let started = try #require(grandchild, "the shell never wrote its child's pid")
        let result = try await child.waitForExit(limit: 1)
        #expect(result.reason == .uncaughtSignal && result.status == SIGKILL, "\(result)")
        // Killed, it is reaped by init at once; allow a loaded machine a minute.
        let deadline = ContinuousClock.now + .seconds(60)
        while kill(started, 0) == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(kill(started, 0) != 0, "the shell's sleep (pid \(started)) outlived the shell")
        if kill(started, 0) == 0 { kill(started, SIGKILL) }
    }
}
