import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

/// `SpawnedProcess`: how a child ends, where its streams go, what it inherits, and waits that are bounded and may be
/// repeated.
@Suite struct SpawnedProcessTests {
    /// Runs `/bin/sh -c script` with its output in pipes and returns both once it ends.
    private func shell(
        _ script: String, environment: [String: String]? = nil, ownProcessGroup: Bool = true
    ) throws -> (termination: SpawnedProcess.Termination, stdout: String, stderr: String) {
        let child = try SpawnedProcess(
            "/bin/sh", ["-c", script], environment: environment, standardInput: .nullDevice, standardOutput: .pipe,
            standardError: .pipe, ownProcessGroup: ownProcessGroup)
        let stdout = try child.standardOutput?.readToEnd() ?? Data()
        let stderr = try child.standardError?.readToEnd() ?? Data()
        let termination = child.waitUntilExit(killingAfter: 30)
        return (termination, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    @Test func reportsTheExitStatus() throws {
        #expect(try shell("exit 3").termination == .init(reason: .exit, status: 3))
        let clean = try shell("true").termination
        #expect(clean.isCleanExit && clean.description == "exited with status 0")
    }

    @Test func reportsTheSignalThatEndedIt() throws {
        let termination = try shell("kill -TERM $$").termination
        #expect(termination == .init(reason: .uncaughtSignal, status: SIGTERM))
        #expect(termination.description == "was killed by signal 15" && !termination.isCleanExit)
    }

    @Test func capturesStandardOutputAndErrorApart() throws {
        let result = try shell("echo out; echo err >&2; echo more")
        #expect(result.stdout == "out\nmore\n")
        #expect(result.stderr == "err\n")
    }

    @Test func writesAndReadsFiles() throws {
        let directory = try TestScratch.directory("spawned-files")
        let input = directory.appendingPathComponent("in").path
        let output = directory.appendingPathComponent("out").path
        try Data("file input\n".utf8).write(to: URL(fileURLWithPath: input))
        try Data("older and longer content\n".utf8).write(to: URL(fileURLWithPath: output))
        let child = try SpawnedProcess(
            "/bin/cat", [], standardInput: .file(input), standardOutput: .file(output), standardError: .nullDevice)
        #expect(child.waitUntilExit(killingAfter: 30).isCleanExit)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "file input\n")
        #expect(child.standardInput == nil && child.standardOutput == nil && child.standardError == nil)
    }

    @Test func feedsStandardInputThroughAPipe() throws {
        let child = try SpawnedProcess("/bin/cat", [], standardInput: .pipe, standardOutput: .pipe)
        let input = try #require(child.standardInput)
        try input.write(contentsOf: Data("through the pipe\n".utf8))
        try input.close()
        let output = try child.standardOutput?.readToEnd() ?? Data()
        #expect(child.waitUntilExit(killingAfter: 30).isCleanExit)
        #expect(String(decoding: output, as: UTF8.self) == "through the pipe\n")
    }

    @Test func standardInputFromTheNullDeviceIsEmpty() throws {
        let child = try SpawnedProcess("/bin/cat", [], standardInput: .nullDevice, standardOutput: .pipe)
        let output = try child.standardOutput?.readToEnd() ?? Data()
        #expect(child.waitUntilExit(killingAfter: 30).isCleanExit)
        #expect(output.isEmpty)
    }

    /// A descriptor the parent opened without close-on-exec stays out of the child: it holds 0, 1 and 2 only.
    @Test func leaksNoDescriptorIntoTheChild() throws {
        let open = Glibc.open("/proc/self/stat", O_RDONLY)
        try #require(open >= 3)
        defer { close(open) }
        // The shell lists its own descriptors from a child of its own, which `ls` opening the directory cannot add to.
        let result = try shell("ls /proc/$$/fd")
        #expect(result.termination.isCleanExit, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n") == ["0", "1", "2"])
    }

    @Test func passesOnlyTheGivenEnvironment() throws {
        let result = try shell("/usr/bin/env", environment: ["TOKENET_SPAWN_TEST": "one two"])
        #expect(result.stdout.split(separator: "\n").filter { !$0.hasPrefix("PWD=") } == ["TOKENET_SPAWN_TEST=one two"])
        // Inherited without one: a variable this process has. (Not one set here: setenv while other tests' threads
        // read the environment to start processes crashed the test process, in Foundation's Process.run.)
        let home = try #require(ProcessInfo.processInfo.environment["HOME"])
        #expect(try shell("echo \"$HOME\"").stdout == home + "\n")
    }

    @Test func leadsAProcessGroupOfItsOwnUnlessAskedNot() throws {
        /// The shell's pid and its process group: the third field after the command's closing parenthesis in
        /// /proc/PID/stat.
        func group(ownProcessGroup: Bool) throws -> (pid: Int32?, group: Int32?) {
            let lines = try shell("echo $$; cat /proc/$$/stat", ownProcessGroup: ownProcessGroup).stdout
                .split(separator: "\n")
            let fields = lines.last?.split(separator: ")").last?.split(separator: " ") ?? []
            return (lines.first.flatMap { Int32($0) }, fields.count > 2 ? Int32(fields[2]) : nil)
        }
        let own = try group(ownProcessGroup: true)
        #expect(own.pid != nil && own.group == own.pid)
        #expect(try group(ownProcessGroup: false).group == getpgrp())
    }

    @Test func startsWithNoSignalHeldBack() throws {
        var held = sigset_t()
        var previous = sigset_t()
        sigemptyset(&held)
        sigaddset(&held, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &held, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        // grep reads its own status: a shell would clear its mask as it starts.
        let child = try SpawnedProcess("/bin/grep", ["SigBlk", "/proc/self/status"], standardOutput: .pipe)
        let output = try child.standardOutput?.readToEnd() ?? Data()
        #expect(child.waitUntilExit(killingAfter: 30).isCleanExit)
        #expect(String(decoding: output, as: UTF8.self) == "SigBlk:\t0000000000000000\n")
    }

    @Test func namesTheMissingExecutableAndTheReason() throws {
        let error = try #require(throws: SpawnedProcess.SpawnError.self) {
            try SpawnedProcess("/nonexistent/tokenet-absent", [])
        }
        #expect(error.code == ENOENT)
        #expect(error.description == "cannot start /nonexistent/tokenet-absent: No such file or directory")
    }

    @Test func runsInTheGivenDirectory() throws {
        let directory = try TestScratch.directory("spawned-directory").path
        let child = try SpawnedProcess("/bin/pwd", [], workingDirectory: directory, standardOutput: .pipe)
        let output = try child.standardOutput?.readToEnd() ?? Data()
        #expect(child.waitUntilExit(killingAfter: 30).isCleanExit)
        #expect(String(decoding: output, as: UTF8.self) == directory + "\n")
        let error = try #require(throws: SpawnedProcess.SpawnError.self) {
            try SpawnedProcess("/bin/pwd", [], workingDirectory: "/nonexistent/directory")
        }
        #expect(error.description == "cannot start /bin/pwd in /nonexistent/directory: No such file or directory")
    }

    @Test func namesTheFileAStreamCouldNotOpen() throws {
        let error = try #require(throws: SpawnedProcess.SpawnError.self) {
            try SpawnedProcess("/bin/true", [], standardOutput: .file("/nonexistent/out"))
        }
        #expect(
            error.description
                == "cannot open /nonexistent/out for the standard output of /bin/true: No such file or directory")
    }

    @Test func aBoundedWaitEndsWhenItsTimeIsUp() throws {
        let child = try SpawnedProcess("/bin/sleep", ["30"], standardInput: .nullDevice)
        defer { child.waitUntilExit(killingAfter: 0) }
        let started = ContinuousClock.now
        #expect(!child.waitForExit(seconds: 0.3))
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(300) && waited < .seconds(5), "\(waited)")
        #expect(child.isRunning && child.termination == nil)
    }

    @Test func aHungChildIsKilledAtTheLimit() throws {
        let child = try SpawnedProcess("/bin/sleep", ["30"], standardInput: .nullDevice)
        let started = ContinuousClock.now
        #expect(child.waitUntilExit(killingAfter: 0.2) == .init(reason: .uncaughtSignal, status: SIGKILL))
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func waitsMayBeRepeatedAndSignalsStopOnceItIsReaped() throws {
        let child = try SpawnedProcess("/bin/sleep", ["30"], standardInput: .nullDevice)
        #expect(child.send(SIGTERM))
        let first = child.waitUntilExit()
        #expect(first == .init(reason: .uncaughtSignal, status: SIGTERM))
        #expect(child.waitUntilExit() == first)
        #expect(child.waitForExit(seconds: 0) && child.waitForExit(seconds: 5))
        #expect(child.termination == first && !child.isRunning)
        #expect(!child.send(SIGTERM))
    }

    @Test func waitsUntilAStoppedChildHasStopped() throws {
        let child = try SpawnedProcess("/bin/sleep", ["30"], standardInput: .nullDevice)
        defer { child.waitUntilExit(killingAfter: 0) }
        #expect(!child.waitUntilStopped(seconds: 0.1))
        #expect(child.send(SIGSTOP))
        #expect(child.waitUntilStopped(seconds: 10))
        // The third field of /proc/PID/stat, after the command in parentheses, is the state: T for stopped.
        let stat = try String(contentsOfFile: "/proc/\(child.pid)/stat", encoding: .utf8)
        #expect(stat.split(separator: ")").last?.split(separator: " ").first == "T", "\(stat)")
        #expect(child.send(SIGCONT))
        #expect(child.send(SIGKILL))
        #expect(child.waitUntilExit() == .init(reason: .uncaughtSignal, status: SIGKILL))
        #expect(!child.waitUntilStopped(seconds: 0))
    }

    /// The reaper waits for its own child only: another child of this process is still there for its own waitpid.
    @Test func reapsNoOtherChild() throws {
        var other: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { free(argv[0]) }
        try #require(posix_spawn(&other, "/bin/true", nil, nil, argv, environ) == 0)
        let child = try SpawnedProcess("/bin/sh", ["-c", "sleep 0.3"], standardInput: .nullDevice)
        #expect(child.waitUntilExit(killingAfter: 30).isCleanExit)
        var status: Int32 = -1
        #expect(waitpid(other, &status, 0) == other && status == 0)
    }

    /// A signal the child starts with blocked waits for it (here, for good: `sleep` never takes it) instead of ending
    /// it, and every other signal still ends it: a node launched so holds a stop signal sent before its first line.
    @Test func blockedSignalsWaitForTheChild() throws {
        let child = try SpawnedProcess("/bin/sleep", ["30"], blockedSignals: [SIGTERM])
        child.send(SIGTERM)
        #expect(!child.waitForExit(seconds: 1), "SIGTERM ended a child that started with it blocked")
        child.send(SIGINT)
        #expect(child.waitForExit(seconds: 60))
        #expect(child.termination == SpawnedProcess.Termination(reason: .uncaughtSignal, status: SIGINT))
    }
}
