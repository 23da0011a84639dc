import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

/// `tokenet` whose standard output cannot be written: what it printed never reached the file, so it must not exit 0.
@Suite struct CLIOutputFailureTests {
    /// Runs `tokenet` with `output` as its standard output and returns its status and standard error.
    private func run(_ arguments: [String], output: FileHandle) throws -> (status: Int32, stderr: String) {
        let directory = try TemporaryDirectory()
        let termination = try SpawnedProcess(
            try BuiltExecutables.url(of: "tokenet").path, arguments, standardInput: .nullDevice,
            standardOutput: .descriptor(output.fileDescriptor), standardError: .file(directory.path("stderr"))
        ).waitUntilExit(killingAfter: 60)
        #expect(termination.reason == .exit)
        return (termination.status, try String(contentsOfFile: directory.path("stderr"), encoding: .utf8))
    }

    @Test func aFullDiskFailsTheCommand() throws {
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        for arguments in [["version"], ["--help"]] {
            let result = try run(arguments, output: full)
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            #expect(
                result.stderr == "tokenet: cannot write standard output: No space left on device\n",
                "\(arguments)")
        }
    }

    /// A stream whose responses cannot be written ends at the first one, and the command fails saying why, rather
    /// than running on (a health watch never ends by itself) while every response is lost. With stdout closed by
    /// the shell, the command's own sockets must not take its number: the JSON would go into the TLS stream.
    @Test(.timeLimit(.minutes(3))) func aStreamThatCannotBeWrittenEndsTheCommand() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, address) = try await LaunchedProcess.plaintextTSPNode(in: scratch)
        defer { node.process.send(SIGTERM) }
        let watch = ["call", "\(address.host):\(address.port)", "tokenet.health.v1.Health/Watch", "--plaintext"]

        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let onFullDisk = try await offThePool { try run(watch, output: full) }
        #expect(onFullDisk.status == 1, "\(onFullDisk.stderr)")
        #expect(onFullDisk.stderr == "tokenet: cannot write standard output: No space left on device\n")

        let directory = try TemporaryDirectory()
        let stderrPath = directory.path("stderr")
        let closed = try await offThePool {
            try SpawnedProcess(
                "/bin/sh", ["-c", "exec \"$0\" \"$@\" >&-", try BuiltExecutables.url(of: "tokenet").path] + watch,
                standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .file(stderrPath)
            ).waitUntilExit(killingAfter: 60)
        }
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(closed.reason == .exit && closed.status == 1, "\(closed.reason) \(closed.status): \(stderr)")
        #expect(stderr == "tokenet: cannot write standard output: Bad file descriptor\n")
    }

    /// Standard input closed at start (`<&-`) is named as such by a command that reads it: it was read as empty
    /// ("the input holds no frame", "the request JSON is empty").
    @Test func aClosedStandardInputIsNamed() throws {
        let directory = try TemporaryDirectory()
        let stderrPath = directory.path("stderr")
        let result = try SpawnedProcess(
            "/bin/sh", ["-c", "exec \"$0\" decode --hex <&-", try BuiltExecutables.url(of: "tokenet").path],
            standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .file(stderrPath)
        ).waitUntilExit(killingAfter: 60)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(result.reason == .exit && result.status == 2, "\(result.reason) \(result.status): \(stderr)")
        #expect(
            stderr.hasPrefix(
                "tokenet: decode: standard input is closed (the command was started with <&-); pipe or redirect the "
                    + "input into it"), "\(stderr)")
    }

    /// A reader that stops early (`tokenet tsp tokens | head -1`) is not an error.
    @Test func aReaderThatGoesAwayIsNotAnError() throws {
        let pipe = Pipe()
        try pipe.fileHandleForReading.close()
        let result = try run(["--help"], output: pipe.fileHandleForWriting)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
    }
}
