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

    /// A reader that stops early (`tokenet tsp tokens | head -1`) is not an error.
    @Test func aReaderThatGoesAwayIsNotAnError() throws {
        let pipe = Pipe()
        try pipe.fileHandleForReading.close()
        let result = try run(["--help"], output: pipe.fileHandleForWriting)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
    }
}
