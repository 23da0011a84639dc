import Dispatch
import Foundation
import Synchronization

/// The process-level entry point shared by `tsp-node`, `issuer-node` and `wallet-node`.
///
/// Exit statuses: 0 after a graceful stop (SIGTERM/SIGINT/SIGHUP) or for `--help`/`--version`; 2 for bad options or
/// configuration; 1 when the node fails while starting or running, or when its stop overran its bound
/// (`StopDeadline`).
public enum NodeMain {
    public static func run(
        _ spec: NodeSpec,
        arguments: [String] = Array(CommandLine.arguments.dropFirst()),
        makeListener: @escaping NodeListenerFactory = defaultNodeListener
    ) -> Never {
        // Before any other thread exists, so that every thread inherits it: a stop signal sent while the node starts
        // waits for the watcher below instead of killing the node half-started or being lost.
        StopSignalWatcher.holdStopSignals()
        StandardStream.occupyClosedDescriptors()
        // Writing to a peer that hung up, or to a log reader that went away (`tsp-node … 2>&1 | head -1`), must be an
        // error return, not a process-killing signal: ignored from the first write on, since the --plaintext banner
        // and any option error are written before the node starts.
        signal(SIGPIPE, SIG_IGN)
        // SIGQUIT quits at once, without draining, as it does other programs: the Swift runtime's crash reporter
        // took it, logged a backtrace headed "Program crashed", and let the node run on.
        signal(SIGQUIT, SIG_DFL)
        // Left at their default, SIGUSR1 and SIGUSR2 ended the node at once, with no log line and its ready file
        // left behind: a signal a tool sends to ask for something (a log reopen, a dump) must not kill it.
        signal(SIGUSR1, SIG_IGN)
        signal(SIGUSR2, SIG_IGN)
        let options: NodeOptions
        do {
            switch try NodeCommandLine.parse(arguments, spec: spec) {
            case .help:
                writeStandardOutput(spec.helpText)
                exit(0)
            case .version:
                writeStandardOutput(TokenetVersion.line(for: spec.name))
                exit(0)
            case .run(let parsed):
                options = parsed
            }
            if let parent = options.parentPID { try ParentWatch.checkRunning(Int32(parent)) }
        } catch {
            // Masked as log lines are: an option's value is echoed, and a card number typed into the wrong place
            // must not land in the node's log stream. With --log-format json on the command line, a JSON line, as
            // every other line the node writes: a collector reading stderr parses each one.
            if jsonLogsAsked(arguments) {
                Logger(node: spec.name, format: .json).error(
                    maskPAN("\(error)"), ["help": "run '\(spec.name) --help' to see every option"])
            } else {
                writeStandardError(
                    escapingInvisibles(keepingLines: maskPAN("\(spec.name): \(error)"))
                        + "\nRun '\(spec.name) --help' to see every option.")
            }
            exit(error.exitStatus)
        }

        let logger = Logger(node: spec.name, level: options.logLevel, format: options.logFormat)
        if options.plaintext {
            // With --log-format json stderr holds JSON lines only (a collector parses each one); the warning line
            // carries the message there, and the banner is for a person reading text.
            if options.logFormat == .text {
                writeStandardError(plaintextBanner(spec.name, source: options.plaintextSource))
            }
            logger.warning("TLS is disabled by \(options.plaintextSource); use only for local debugging")
        }
        // 0.0.0.0 and [::] are what a node listens on, and what its READY line then shows: copied into another
        // node's peer address they reach this machine's loopback, so a setup that works on one machine fails, with
        // nothing said, once the parties run on several.
        let peerAddresses =
            options.peers.sorted { $0.key.rawValue < $1.key.rawValue }.map { ($0.key.rawValue, $0.value) }
            + options.issuerRoutes.sorted { $0.key < $1.key }.map { ("issuer \($0.key)", $0.value) }
        for (peer, address) in peerAddresses where address.hostIsUnspecified {
            logger.warning(
                "the \(peer) address \(address) is the unspecified address, which reaches only this machine; give "
                    + "the address of the machine the \(peer) runs on (127.0.0.1 on this one)")
        }

        // Watch for stop signals before binding; one sent earlier has been held back since the first line.
        let stopRequested = DispatchSemaphore(value: 0)
        let firstSignal = Mutex<Int32?>(nil)
        let watcher = StopSignalWatcher { number in
            let isFirst = firstSignal.withLock { received in
                guard received == nil else { return false }
                received = number
                return true
            }
            if isFirst {
                stopRequested.signal()
            } else {
                // The stop under way is bounded by --drain-timeout already; cutting it short would end calls that
                // are about to finish.
                logger.info("already stopping", ["signal": StopSignalWatcher.name(of: number)])
            }
        }
        let parentEnded = Atomic<Bool>(false)
        if let parent = options.parentPID {
            ParentWatch.start(Int32(parent)) {
                let isFirst = firstSignal.withLock { received in
                    guard received == nil else { return false }
                    received = SIGTERM
                    return true
                }
                parentEnded.store(true, ordering: .releasing)
                if isFirst { stopRequested.signal() }
            }
        }

        let runtime: NodeRuntime
        do {
            runtime = try NodeRuntime.start(
                spec: spec, options: options, logger: logger, makeListener: makeListener,
                stopRequested: { firstSignal.withLock { $0 } != nil },
                announce: { line in
                    writeStandardOutput(line)
                    // A READY line lost (stdout closed, a full disk, a reader gone) left whoever waits for it waiting
                    // without a word; the node serves all the same, and its log says so.
                    if let lost = StandardStream.outputWriteError {
                        logger.warning(
                            "the READY line could not be written to standard output; whoever waits for it will not "
                                + "see this node ready, though it serves",
                            ["error": String(cString: strerror(lost))])
                    } else if StandardStream.outputReaderLeft {
                        logger.warning(
                            "the READY line found no reader on standard output (its pipe was closed); whoever waits "
                                + "for it will not see this node ready, though it serves")
                    }
                })
        } catch {
            let (note, status) = failedStart(
                error,
                fullDiskNote: DiskSpace.fullDiskNote(dataDirectory: options.resolvedDataDirectory(node: spec.name)))
            if let note {
                logger.error("cannot start", ["error": error.description, "hint": note])
            } else {
                logger.error("cannot start", ["error": error.description])
            }
            exit(status)
        }

        stopRequested.wait()
        // Armed before the first line of the stop is logged: that line is the first write that may block.
        StopDeadline.arm(
            after: .milliseconds(options.drainTimeoutMilliseconds) + StopDeadline.grace, node: spec.name,
            format: options.logFormat)
        if parentEnded.load(ordering: .acquiring), let parent = options.parentPID {
            logger.info("stopping", ["reason": "process \(parent) (--parent-pid) ended"])
        } else {
            logger.info("stopping", ["signal": StopSignalWatcher.name(of: firstSignal.withLock { $0 } ?? SIGTERM)])
        }
        runtime.stop()
        watcher.cancel()
        logger.info("stopped")
        exit(0)
    }

    /// The hint and exit status of a start that failed. A full disk is the operator's to fix before a restart can
    /// help, as a database the node cannot write is: status 2, with the hint, whichever write met it first. A used
    /// data directory exited 1 with the hint (SQLite's "disk I/O error" at open), a new one 2 without it (its vault
    /// key's "No space left on device"). A port already taken has nothing to do with the disk.
    static func failedStart(_ error: NodeError, fullDiskNote: String?) -> (hint: String?, status: Int32) {
        // A configuration mistake (a missing certificate, a wrong role) is the disk's only when the system said
        // so: freeing space does not fix a missing file.
        let disk = error.code == .io || (error.code == .config && error.description.contains("(errno \(ENOSPC))"))
        guard let fullDiskNote, disk else { return (nil, error.exitStatus) }
        return (fullDiskNote, 2)
    }

    /// Printed on stderr, outside the log format, so nobody can miss it.
    static func plaintextBanner(_ node: String, source: String = "--plaintext") -> String {
        let rule = String(repeating: "!", count: 78)
        return """
            \(rule)
            !! \(node): \(source) is set. TLS is OFF: peers are not authenticated and traffic,
            !! including card data, crosses the network unencrypted. Use only for local debugging.
            \(rule)
            """
    }
}

func writeStandardOutput(_ line: String) { StandardStream.output.write(line: line) }

func writeStandardError(_ line: String) { StandardStream.error.write(line: line) }

/// Whether the command line asks for JSON logs (`--log-format json` or `--log-format=json`), or, when it names no log
/// format, the config file it gives does (`"log-format": "json"`), read before the options are parsed: a mistake in
/// them is said in the format asked for. A config file's own mistakes came out as text when the file asked for JSON.
func jsonLogsAsked(_ arguments: [String]) -> Bool {
    var format: String?
    var config: String?
    for (index, argument) in arguments.enumerated() {
        let next = index + 1 < arguments.count ? arguments[index + 1] : nil
        if argument == "--log-format" {
            format = next
        } else if argument.hasPrefix("--log-format=") {
            format = String(argument.dropFirst("--log-format=".count))
        } else if argument == "--config" {
            config = next
        } else if argument.hasPrefix("--config=") {
            config = String(argument.dropFirst("--config=".count))
        }
    }
    if let format { return format == "json" }
    guard let config, let data = try? NodeConfigFile.read(path: config),
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    else { return false }
    return object["log-format"] as? String == "json"
}

/// `text` with its control and invisible characters escaped, as log lines write them, but its line breaks kept: a
/// value typed with an escape sequence (`--listen $'\e[31m…'`) recoloured the terminal its usage error was shown on.
func escapingInvisibles(keepingLines text: String) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false).map { LogRecord.escapingInvisibles(String($0)) }
        .joined(separator: "\n")
}
