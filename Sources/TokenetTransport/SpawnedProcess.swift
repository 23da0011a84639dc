import CTokenetShims
import Dispatch
import Foundation
import Synchronization

/// A child process started through posix_spawn(3), its end awaited by a thread of its own.
///
/// Foundation's `Process.run()` on this toolchain lists /proc/self/fd copying each `dirent` with its whole 256-byte
/// name field, past the end of the record (swift-corelibs-foundation #5472): in a process that holds hundreds of
/// descriptors a record now and then ends just before an unmapped page and the copy crashes. Nothing is listed here:
/// the child's standard streams are set with dup2 and every other descriptor is closed in the child
/// (`posix_spawn_file_actions_addclosefrom_np`), so none of the parent's leaks into it, close-on-exec or not.
///
/// As with `Process`, the child leads a process group of its own unless asked otherwise: a Ctrl-C at the terminal
/// reaches the `tokenet` command alone, which then stops its nodes in order, not every node at once. Unlike with
/// `Process`, every signal starts unblocked and at its default: the concurrency runtime's threads hold SIGTERM back
/// and this process ignores SIGPIPE, and a child that inherited either could not be stopped with `kill` or would
/// not end when its reader went away.
///
/// A thread waits for the child's end without reaping it (`waitid` with `WNOWAIT`), then reaps it under the lock that
/// `send(_:)` takes: a signal never reaches a process that was given the pid after the child was reaped. Only the
/// child's own pid is ever waited for, and it is reaped exactly once.
public final class SpawnedProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// The parent's own descriptor.
        case inherit
        /// /dev/null.
        case nullDevice
        /// A copy of an open descriptor, which stays the caller's to close.
        case descriptor(Int32)
        /// A file: read for standard input, else created or emptied and written.
        case file(String)
        /// A pipe whose other end the parent reads (`standardOutput`, `standardError`) or writes (`standardInput`).
        case pipe
    }

    /// How the child ended.
    public struct Termination: Sendable, Equatable, CustomStringConvertible {
        public enum Reason: Sendable {
            /// It exited; `status` is its exit status.
            case exit
            /// A signal ended it; `status` is the signal's number.
            case uncaughtSignal
        }

        public var reason: Reason
        public var status: Int32

        public init(reason: Reason, status: Int32) {
            self.reason = reason
            self.status = status
        }

        init(waitStatus: Int32) {
            if ctk_wait_signaled(waitStatus) != 0 {
                self.init(reason: .uncaughtSignal, status: ctk_wait_term_signal(waitStatus))
            } else {
                self.init(reason: .exit, status: ctk_wait_exit_status(waitStatus))
            }
        }

        /// Exited with status 0.
        public var isCleanExit: Bool { reason == .exit && status == 0 }

        public var description: String {
            switch reason {
            case .exit: "exited with status \(status)"
            case .uncaughtSignal: "was killed by signal \(status)"
            }
        }
    }

    /// Why a child could not be started, naming the executable (or the file a stream was to use) and the system's
    /// reason.
    public struct SpawnError: Error, CustomStringConvertible, Sendable {
        /// The errno value.
        public var code: Int32
        /// The system's text for `code`, such as "No such file or directory".
        public var reason: String
        public var description: String

        init(_ code: Int32, _ what: String) {
            self.code = code
            reason = String(cString: strerror(code))
            description = "\(what): \(reason)"
        }
    }

    public let pid: pid_t
    public let executable: String
    /// The parent's ends of the pipes asked for with `.pipe`, nil for a stream set otherwise. Each closes when this
    /// object goes, which the thread waiting for the child delays until the child has ended: a child that reads its
    /// input to the end needs `standardInput` closed explicitly.
    public let standardInput: FileHandle?
    public let standardOutput: FileHandle?
    public let standardError: FileHandle?
    /// Nil until the child has been reaped.
    private let ended = Mutex<Termination?>(nil)
    /// Entered at the start, left once the child is reaped: any number of waits, on any thread, bounded or not.
    private let exited = DispatchGroup()

    /// Starts `executable` (a path: no search of PATH) with `arguments`, and with `environment` when given, else
    /// this process's environment; in `workingDirectory` when given, else in this process's.
    ///
    /// `ownProcessGroup` puts the child in a new process group, as `Process` does. `blockedSignals` start blocked
    /// in the child (every other signal unblocked, and all at their default action): for a child that takes them
    /// itself once it runs (a node holds its stop signals from its first line), so that one sent before then waits
    /// for it instead of killing it half-started.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        workingDirectory: String? = nil, standardInput: Stream = .inherit, standardOutput: Stream = .inherit,
        standardError: Stream = .inherit, ownProcessGroup: Bool = true, blockedSignals: [Int32] = []
    ) throws(SpawnError) {
        self.executable = executable
        // For each of 0, 1 and 2: the descriptor the child duplicates onto it (nil: the parent's own), and the
        // parent's end of a pipe. All of them are close-on-exec and at 3 or above, so one dup2 never overwrites the
        // source of another.
        var sources: [Int32?] = [nil, nil, nil]
        var parentEnds: [Int32?] = [nil, nil, nil]
        defer { for case let descriptor? in sources { close(descriptor) } }
        do {
            for (target, stream) in [standardInput, standardOutput, standardError].enumerated() {
                (sources[target], parentEnds[target]) = try Self.childEnd(stream, for: target, of: executable)
            }
            pid = try Self.spawn(
                executable, arguments, environment: environment, workingDirectory: workingDirectory, sources: sources,
                ownProcessGroup: ownProcessGroup, blockedSignals: blockedSignals)
        } catch {
            for case let descriptor? in parentEnds { close(descriptor) }
            throw error
        }
        let handles = parentEnds.map { $0.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) } }
        (self.standardInput, self.standardOutput, self.standardError) = (handles[0], handles[1], handles[2])
        exited.enter()
        NamedThread.start("tokenet-reaper") { self.reap() }
    }

    /// How the child ended; nil while it runs.
    public var termination: Termination? { ended.withLock { $0 } }

    /// True until the child has been reaped.
    public var isRunning: Bool { termination == nil }

    /// Waits up to `seconds` for the child to end; true when it has.
    @discardableResult
    public func waitForExit(seconds: Double) -> Bool {
        // Reaped already: the semaphore is signalled just after, and a look in between read "still running".
        if termination != nil { return true }
        let timeout: DispatchTime =
            seconds.isNaN || seconds <= 0 ? .now() : seconds >= 1_000_000 ? .distantFuture : .now() + seconds
        return exited.wait(timeout: timeout) == .success
    }

    /// Waits for the child to end, however long it takes.
    @discardableResult
    public func waitUntilExit() -> Termination {
        exited.wait()
        return termination!
    }

    /// Waits for the child to end; one that outlives `limit` seconds is killed with SIGKILL, so a hung child fails
    /// its caller (`.uncaughtSignal`) instead of holding it.
    @discardableResult
    public func waitUntilExit(killingAfter limit: Double) -> Termination {
        if !waitForExit(seconds: limit) { send(SIGKILL) }
        return waitUntilExit()
    }

    /// Sends `signal` to the child; false once it has been reaped (its pid may then be another process's).
    @discardableResult
    public func send(_ signal: Int32) -> Bool {
        ended.withLock { $0 == nil && kill(pid, signal) == 0 }
    }

    /// Sends `signal` to the child's process group (its own, with `ownProcessGroup`): a script's children too, which
    /// a signal to the script alone leaves running; false once the child has been reaped.
    @discardableResult
    public func sendToGroup(_ signal: Int32) -> Bool {
        ended.withLock { $0 == nil && kill(-pid, signal) == 0 }
    }

    /// Waits up to `seconds` until the child has stopped; true when it has. `kill` returns before SIGSTOP takes
    /// effect: until one of the child's threads has taken the signal, the others run on, and on a loaded machine a
    /// "paused" node went on to answer a TLS handshake. Polls every millisecond, since no descriptor or wait both
    /// reports a stop and can be bounded.
    public func waitUntilStopped(seconds: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(max(0, min(seconds, 1_000_000)) * 1000))
        while true {
            // Under the lock, so the pid asked about is still the child's.
            let stopped = ended.withLock { $0 == nil ? ctk_child_is_stopped(pid) : -1 }
            if stopped == 1 { return true }
            if stopped < 0 || ContinuousClock.now >= deadline { return false }
            usleep(1_000)
        }
    }

    private func reap() {
        // ECHILD means another waiter reaped the child (or SIGCHLD is ignored): its status is lost.
        let waited = ctk_wait_until_ended(pid)
        ended.withLock { termination in
            var status: Int32 = 0
            var result: pid_t = -1
            if waited == 0 {
                repeat { result = waitpid(pid, &status, 0) } while result < 0 && errno == EINTR
            }
            termination = result == pid ? Termination(waitStatus: status) : Termination(reason: .exit, status: -1)
        }
        exited.leave()
    }

    /// The descriptor the child takes as `target` (0, 1 or 2) and the parent's end of a pipe, both close-on-exec and
    /// at 3 or above.
    private static func childEnd(_ stream: Stream, for target: Int, of executable: String) throws(SpawnError) -> (
        Int32?, Int32?
    ) {
        let reading = target == 0
        let name = ["standard input", "standard output", "standard error"][target]
        func raised(_ descriptor: Int32, _ what: String) throws(SpawnError) -> Int32 {
            guard descriptor >= 0 else { throw SpawnError(errno, what) }
            guard descriptor < 3 else { return descriptor }
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
            let code = errno
            close(descriptor)
            guard copy >= 0 else { throw SpawnError(code, what) }
            return copy
        }
        switch stream {
        case .inherit:
            return (nil, nil)
        case .nullDevice:
            let flags = (reading ? O_RDONLY : O_WRONLY) | O_CLOEXEC
            return (try raised(open("/dev/null", flags), "cannot open /dev/null for \(executable)"), nil)
        case .descriptor(let descriptor):
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
            guard copy >= 0 else { throw SpawnError(errno, "cannot pass descriptor \(descriptor) to \(executable)") }
            return (copy, nil)
        case .file(let path):
            let flags = (reading ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC) | O_CLOEXEC
            let what = "cannot open \(path) for the \(name) of \(executable)"
            return (try raised(open(path, flags, 0o666), what), nil)
        case .pipe:
            var ends: [Int32] = [-1, -1]
            guard ctk_pipe_cloexec(&ends) == 0 else { throw SpawnError(errno, "cannot make a pipe for \(executable)") }
            let what = "cannot make a pipe for \(executable)"
            let readEnd: Int32
            do { readEnd = try raised(ends[0], what) } catch {
                close(ends[1])
                throw error
            }
            let writeEnd: Int32
            do { writeEnd = try raised(ends[1], what) } catch {
                close(readEnd)
                throw error
            }
            return reading ? (readEnd, writeEnd) : (writeEnd, readEnd)
        }
    }

    private static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String]?, workingDirectory: String?,
        sources: [Int32?], ownProcessGroup: Bool, blockedSignals: [Int32]
    ) throws(SpawnError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        var failure: Int32 = 0
        for (target, source) in sources.enumerated() {
            if let source, failure == 0 { failure = posix_spawn_file_actions_adddup2(&actions, source, Int32(target)) }
        }
        if failure == 0 { failure = ctk_spawn_actions_close_from(&actions, 3) }
        if let workingDirectory, failure == 0 { failure = ctk_spawn_actions_chdir(&actions, workingDirectory) }
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for number in blockedSignals { sigaddset(&blocked, number) }
        if failure == 0 { failure = posix_spawnattr_setsigmask(&attributes, &blocked) }
        var all = sigset_t()
        sigfillset(&all)
        if failure == 0 { failure = posix_spawnattr_setsigdefault(&attributes, &all) }
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if ownProcessGroup {
            flags |= POSIX_SPAWN_SETPGROUP
            if failure == 0 { failure = posix_spawnattr_setpgroup(&attributes, 0) }
        }
        if failure == 0 { failure = posix_spawnattr_setflags(&attributes, Int16(flags)) }
        guard failure == 0 else { throw SpawnError(failure, "cannot prepare to start \(executable)") }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for pointer in envp ?? [] { free(pointer) } }
        var pid: pid_t = 0
        let result = argv.withUnsafeBufferPointer { argv in
            if let envp {
                envp.withUnsafeBufferPointer {
                    posix_spawn(&pid, executable, &actions, &attributes, argv.baseAddress!, $0.baseAddress!)
                }
            } else {
                posix_spawn(&pid, executable, &actions, &attributes, argv.baseAddress!, environ)
            }
        }
        guard result == 0 else {
            // A directory that cannot be entered fails the start with the same error as a missing executable.
            throw SpawnError(result, "cannot start \(executable)" + (workingDirectory.map { " in \($0)" } ?? ""))
        }
        return pid
    }
}
