import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

/// The crash helper commits until it is killed; one whose test run stalled or died must not go on filling the disk.
@Suite struct CrashHelperLifetimeTests {
    /// A shell starts the helper in the background and exits: the helper, reparented, stops by itself and says why.
    @Test(.timeLimit(.minutes(3))) func theHelperStopsWhenItsParentIsGone() async throws {
        let directory = try TemporaryDirectory()
        let helper = try BuiltExecutables.url(of: "tokenet-storage-crash-helper").path
        // The pid goes to a file, not a pipe: the helper would inherit the pipe and hold it open.
        let shell = try SpawnedProcess(
            "/bin/sh",
            [
                "-c", "\"$0\" \"$1\" 40 > \"$2\" 2> \"$3\" & echo $! > \"$4\"", helper, directory.path("node.sqlite"),
                directory.path("helper.out"), directory.path("helper.err"), directory.path("helper.pid"),
            ], standardOutput: .nullDevice)
        shell.waitUntilExit(killingAfter: 30)
        let text = try String(contentsOfFile: directory.path("helper.pid"), encoding: .utf8)
        let pid = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        defer { kill(pid, SIGKILL) }
        // The reparented helper is not this process's child, so it is watched with signal 0 until it is gone.
        let started = Date()
        while kill(pid, 0) == 0, Date().timeIntervalSince(started) < 30 {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(kill(pid, 0) != 0, "the helper still runs 30 s after its parent exited")
        let errors = try String(contentsOfFile: directory.path("helper.err"), encoding: .utf8)
        #expect(errors.contains("its parent process is gone"), "\(errors)")
    }
}
