import Foundation
import Synchronization
import TokenetTransport

/// For a tool that starts child processes and makes temporary files (the benchmarks): a stop signal (SIGTERM,
/// SIGINT, SIGHUP) stops the children it tracks, each with its process group, removes the paths, and ends the tool
/// with status 128 + the signal, as a shell reports a command the signal ended. Before, Ctrl-C ended the tool
/// alone: its server child, in a process group of its own, ran on to its lifetime, and its temporary directory
/// (with a CA key) stayed behind.
public final class InterruptCleanup: Sendable {
    private struct State {
        var processes: [UInt64: SpawnedProcess] = [:]
        var next: UInt64 = 0
        var paths: [String] = []
    }

    private let state = Mutex(State())
    private let tool: String
    private let watcher = Mutex<StopSignalWatcher?>(nil)

    public init(tool: String) {
        self.tool = tool
        let watcher = StopSignalWatcher { [weak self] number in self?.stop(by: number) }
        self.watcher.withLock { $0 = watcher }
    }

    deinit {
        watcher.withLock { $0?.cancel() }
    }

    /// Stops `process` (and its process group) if a stop signal comes before `untrack`.
    @discardableResult
    public func track(_ process: SpawnedProcess) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.processes[state.next] = process
            return state.next
        }
    }

    public func untrack(_ id: UInt64) {
        _ = state.withLock { $0.processes.removeValue(forKey: id) }
    }

    /// Removes `path` (a file or a directory, with what it holds) if a stop signal comes.
    public func removeOnStop(_ path: String) {
        state.withLock { $0.paths.append(path) }
    }

    /// Set once a stop signal is being handled: the tool's own failure path (a call cut by the stopped server)
    /// must then leave the exit to the cleanup (`parkIfStopping`), or it exited 1 before the directory was gone.
    private static let stopping = Atomic<Bool>(false)

    /// Never returns while a stop signal is being handled (the cleanup ends the process); returns at once otherwise.
    public static func parkIfStopping() {
        while stopping.load(ordering: .acquiring) { sleep(60) }
    }

    /// Removes `path` unless a stop signal is being handled, whose cleanup removes it: the tool's own `defer`
    /// (run as a call cut by the stopped server unwinds) and the cleanup removing one tree at once race.
    public static func removeUnlessStopping(_ path: String) {
        guard !stopping.load(ordering: .acquiring) else { return }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Removes `path`, trying again while it is still there (for up to a second): a removal started by the tool's
    /// own failure path just before the signal may be walking the same tree, and a removal that finds an entry
    /// gone under it can stop there; one attempt left the directory, with the PKI's CA key, in $TMPDIR.
    static func removeUntilGone(_ path: String) -> Bool {
        var status = stat()
        for attempt in 0..<20 {
            try? FileManager.default.removeItem(atPath: path)
            guard lstat(path, &status) == 0 else { return true }
            if attempt < 19 { usleep(50_000) }
        }
        return false
    }

    private func stop(by number: Int32) {
        Self.stopping.store(true, ordering: .releasing)
        let (processes, paths) = state.withLock { (Array($0.processes.values), $0.paths) }
        for process in processes { _ = process.sendToGroup(SIGTERM) }
        for process in processes { _ = process.waitUntilExit(killingAfter: 5) }
        for path in paths where !Self.removeUntilGone(path) {
            FileHandle.standardError.write(Data("\(tool): could not remove \(path); remove it by hand\n".utf8))
        }
        FileHandle.standardError.write(
            Data("\(tool): stopped by \(StopSignalWatcher.name(of: number)); its children and files are gone\n".utf8))
        exit(128 + number)
    }
}
