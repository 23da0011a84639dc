import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a child through posix_spawn(3) and waits for it, for the tests that start the most children.
///
/// Foundation's `Process.run()` on this toolchain lists /proc/self/fd with a copy of each `dirent` that reads the
/// whole 256-byte name field past the record (swift-corelibs-foundation #5472): with the hundreds of descriptors a
/// full parallel test run holds open, a record now and then ends a page before an unmapped one, and the test process
/// crashed in `memcpy`, frozen for half a minute while its backtrace was taken, which failed every test waiting on
/// it. The child's descriptors other than 0, 1 and 2 are the test process's close-on-exec ones, as Foundation's are.
public enum SpawnedChild {
    public struct SpawnError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `executable` with `arguments` (and only `environment`, when given), its standard streams on the given
    /// descriptors; one that outlives `limit` seconds is killed with SIGKILL, as `waitUntilExit(killingAfter:)`
    /// does. Returns its exit status, or the signal that ended it.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        standardInput: Int32, standardOutput: Int32, standardError: Int32, limit: Double
    ) throws -> (status: Int32, reason: Process.TerminationReason) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        posix_spawn_file_actions_adddup2(&actions, standardOutput, 1)
        posix_spawn_file_actions_adddup2(&actions, standardError, 2)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for pointer in envp ?? [] { free(pointer) } }
        var pid: pid_t = 0
        let result = argv.withUnsafeBufferPointer { arguments in
            if let envp {
                envp.withUnsafeBufferPointer {
                    posix_spawn(&pid, executable, &actions, nil, arguments.baseAddress!, $0.baseAddress!)
                }
            } else {
                posix_spawn(&pid, executable, &actions, nil, arguments.baseAddress!, environ)
            }
        }
        guard result == 0 else {
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(result)))")
        }

        let deadline = ContinuousClock.now + .milliseconds(Int(limit * 1000))
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) != pid {
            if ContinuousClock.now >= deadline {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                break
            }
            usleep(2_000)
        }
        // WIFEXITED and its kin are macros Swift does not import.
        let signal = status & 0x7F
        return signal == 0 ? ((status >> 8) & 0xFF, .exit) : (signal, .uncaughtSignal)
    }
}
