import Foundation
import Synchronization
import TokenetFaults
import TokenetNode
import TokenetTransport

/// `tokenet proxy --to HOST:PORT`: a fault-injecting TCP proxy between two parties (`TokenetFaults.FaultProxy`),
/// steered by commands on standard input, so that a script can delay, partition, refuse and cut the traffic
/// between live nodes while a flow runs.
enum ProxyCommand {
    static let subcommand = Subcommand(
        name: "proxy",
        summary: "Carry TCP connections to a node while delaying, partitioning, refusing or cutting them on command.",
        help: help,
        valuedOptions: Options.valuedFlags
    ) { arguments throws(CLIError) in
        try run(try Options(parsing: arguments))
    }

    struct Options {
        var listen = HostPort(host: "127.0.0.1", port: 0)
        var upstream: HostPort
        var fault = Fault.none

        /// The options that take a value (`ArgumentScanner`).
        static let valuedFlags: Set<String> = ["--to", "--listen", "--delay"]

        init(parsing arguments: [String]) throws(CLIError) {
            var upstream: HostPort?
            var faults: [Fault] = []
            func address(_ flag: String, _ text: String) throws(CLIError) -> HostPort {
                // A port past 65535 is the mistake to name: "with an IP host" sent the eye to a host that was fine.
                if HostPort(parsing: text) == nil, let port = HostPort.portPastRange(in: text) {
                    throw CLIError(
                        .usage, "proxy: \(flag): '\(maskPAN(text))' has port \(port), past the last port (65535)")
                }
                // The upstream may be named (looked up at each connection); the proxy listens on an address.
                let upstream = flag == "--to"
                if let zone = HostPort(parsing: text)?.zoneRefusal {
                    throw CLIError(.usage, "proxy: \(flag): '\(maskPAN(text))' \(zone)")
                }
                guard let address = HostPort(parsing: text),
                    upstream ? address.hostIsIPOrName : address.hostIsIPOrLocalhost
                else {
                    let host = upstream ? "an IP address or a host name" : "an IP address ([::1] for IPv6)"
                    // What was typed is quoted with a card number in it masked, as every command quotes it.
                    throw CLIError(.usage, "proxy: \(flag): expected HOST:PORT with \(host), got '\(maskPAN(text))'")
                }
                if !upstream, let refusal = address.listenRefusal {
                    throw CLIError(
                        .usage,
                        "proxy: --listen: \(refusal); listen on 127.0.0.1, [::1], or 0.0.0.0 or [::] for every "
                            + "interface")
                }
                return address
            }
            var scanner = ArgumentScanner(arguments, command: "proxy", valued: Self.valuedFlags)
            while let item = try scanner.next() {
                switch item {
                case .valued("--to", let text): upstream = try address("--to", text)
                case .valued("--listen", let text): listen = try address("--listen", text)
                case .valued("--delay", let text):
                    do throws(FaultError) {
                        faults.append(.delay(try FaultCommand.duration(text)))
                    } catch {
                        throw CLIError(.usage, "proxy: --delay: " + maskPAN(error.message))
                    }
                case .flag("--partition", nil): faults.append(.partition)
                case .flag("--refuse", nil): faults.append(.refuse)
                case .flag(let flag, let inline) where ["--partition", "--refuse"].contains(flag) && inline != nil:
                    throw CLIError(.usage, "proxy: \(flag) takes no value")
                case .valued(let flag, _), .flag(let flag, _):
                    let hint = ArgumentScanner.singleDashHint(
                        flag, options: Self.valuedFlags.union(["--partition", "--refuse"]))
                    throw CLIError(.usage, "proxy: unknown option '\(flag)'\(hint)")
                case .endOfOptions: continue
                case .operand(let operand):
                    throw CLIError(
                        .usage, "proxy: unexpected argument '\(operand)' (the node's address is --to HOST:PORT)")
                }
            }
            guard let upstream else { throw CLIError(.usage, "proxy: --to HOST:PORT is required") }
            guard faults.count <= 1 else {
                throw CLIError(.usage, "proxy: give at most one of --delay, --partition and --refuse")
            }
            guard upstream.port != 0 else { throw CLIError(.usage, "proxy: --to needs a port other than 0") }
            // Carried to itself, each connection opened another until the process ran out of descriptors.
            if upstream.port == listen.port, ProxyCommand.sameHost(upstream.host, listen.host) {
                throw CLIError(
                    .usage,
                    "proxy: --to \(upstream) is the proxy's own --listen address, so it would connect to itself; "
                        + "--to is the node's address, --listen the one its peers are given instead")
            }
            self.upstream = upstream
            fault = faults.first ?? .none
        }
    }

    /// Whether a connection to `upstream` would reach a listener bound to `listen`: the same name, or a loopback
    /// address and a listener on loopback or on every address.
    static func sameHost(_ upstream: String, _ listen: String) -> Bool {
        let loopback: Set<String> = ["127.0.0.1", "localhost", "::1"]
        let everywhere: Set<String> = ["0.0.0.0", "::"]
        if upstream.lowercased() == listen.lowercased() { return true }
        return loopback.contains(upstream.lowercased())
            && (loopback.contains(listen.lowercased()) || everywhere.contains(listen))
    }

    static func run(_ options: Options) throws(CLIError) -> Int32 {
        let outcome: Result<Void, CLIError> = runBlocking {
            do {
                let loop = try EventLoop(name: "tokenet-proxy")
                defer { loop.shutdown() }
                let proxy = try await FaultProxy.bind(
                    host: options.listen.host, port: options.listen.port, upstreamHost: options.upstream.host,
                    upstreamPort: options.upstream.port, fault: options.fault, on: loop,
                    upstreamReport: upstreamReport(to: options.upstream), acceptReport: acceptReport())
                let stopped = Atomic<Bool>(false)
                let watcher = StopSignalWatcher { _ in
                    guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
                    Task { await proxy.close() }
                }
                defer { watcher.cancel() }
                let listen = HostPort(host: proxy.host, port: proxy.port)
                printOut("PROXY listen=\(listen) to=\(options.upstream) \(status(of: proxy))")
                readCommands(for: proxy)
                await proxy.serve()
                return .success(())
            } catch let error as FaultError {
                // The --listen address is the user's to change (status 2), told in words without the transport's
                // error code.
                if error.code == .address, let cause = error.cause as? TransportError, cause.code == .invalidAddress {
                    let remedy = BindFailure.remedy(host: options.listen.host, reason: cause.message)
                    return .failure(CLIError(.usage, "proxy: --listen \(options.listen): \(cause.message); \(remedy)"))
                }
                return .failure(CLIError(.setup, "proxy: \(error)"))
            } catch {
                return .failure(CLIError(.setup, "proxy: \(error)"))
            }
        }
        try outcome.get()
        return 0
    }

    /// Says on standard error when connections to --to fail, once until one succeeds again: a peer that retries
    /// would otherwise fill the terminal, and without it the only sign was the client's "unexpected eof".
    static func upstreamReport(to upstream: HostPort) -> FaultProxy.UpstreamReport {
        let failing = Atomic<Bool>(false)
        return { failure in
            guard let failure else {
                if failing.exchange(false, ordering: .acquiringAndReleasing) {
                    printError("tokenet: proxy: connected to --to \(upstream) again")
                }
                return
            }
            guard !failing.exchange(true, ordering: .acquiringAndReleasing) else { return }
            // The proxy's own limit, not the node: starting the node there, which runs, would change nothing.
            if let error = failure as? TransportError, error.isOutOfDescriptors {
                printError(
                    "tokenet: proxy: cannot connect to --to \(upstream): \(error.message); each client's connection "
                        + "is closed at once meanwhile")
                return
            }
            printError(
                "tokenet: proxy: cannot connect to --to \(upstream) (\(failure)), so each client's connection is "
                    + "closed at once; start the node there, or give the address it listens on")
        }
    }

    /// Says on standard error why the proxy stopped accepting (out of file descriptors), at most once a second: the
    /// clients that wait meanwhile sat in the listen queue, neither carried nor closed, and nothing said why.
    static func acceptReport() -> @Sendable (TransportError) -> Void {
        let throttle = LogThrottle()
        return { error in
            throttle.submit { notShown in
                let more = notShown > 0 ? " (\(notShown) more times)" : ""
                printError("tokenet: proxy: \(error.message)\(more)")
            }
        }
    }

    static func status(of proxy: FaultProxy) -> String {
        let faults = proxy.summary.replacingOccurrences(of: ", ", with: ",").replacingOccurrences(of: " ", with: ":")
        return "fault=\(faults) connections=\(proxy.connectionCount)"
    }

    /// The longest control line the proxy reads; a command is a few words. `readLine` kept a line whole however long
    /// it grew: 300 MB without a line break held hundreds of megabytes and a core busy.
    static let commandLineLimit = 4 * 1024

    /// Reads control lines from standard input on a thread of its own (a blocking read must not hold a thread of
    /// the cooperative pool) and answers each on standard output. End of input leaves the proxy running: it stops
    /// on SIGTERM, SIGINT or SIGHUP.
    static func readCommands(for proxy: FaultProxy) {
        NamedThread.start("tokenet-proxy-commands") {
            UpCommand.Console.readLines(limit: commandLineLimit) { read in
                guard case .text(let line) = read else {
                    if case .skipped(let reason) = read { printOut("error: a line \(reason)") }
                    return
                }
                if line.trimmingCharacters(in: .whitespaces).isEmpty { return }
                do throws(FaultError) {
                    switch try FaultCommand.parse(line) {
                    case .set(let fault, let direction): proxy.set(fault, only: direction)
                    case .reset: proxy.reset()
                    case .status: break
                    }
                    printOut(status(of: proxy))
                } catch {
                    // The error quotes the line typed, which may hold a card number.
                    printOut("error: " + maskPAN(error.message))
                }
            }
        }
    }

    static let help = """
        Usage: tokenet proxy --to HOST:PORT [--listen HOST:PORT] [--delay DURATION | --partition | --refuse]

        Carries every TCP connection made to --listen (default 127.0.0.1:0, a free port) on to --to, as a fault in
        force says. It never reads inside the bytes, so TLS passes through end to end: point a node's peer address
        (such as tsp-node --issuer) or the CLI at the proxy instead of the node, and both ends still authenticate
        each other. Once listening it prints 'PROXY listen=HOST:PORT to=HOST:PORT fault=none connections=0'. When
        nothing answers at --to, each client's connection is closed and standard error says so, once until a
        connection to --to succeeds again. A side's end of stream is passed on as a half-close, after the bytes
        before it, while the other direction carries on: a client that shuts down its writes still gets the answer.
        The connection ends once both sides have ended theirs: a side that never ends its stream keeps it, and its count
        in 'connections=', until 'reset'. A side that resets its connection (or fails) has the other side reset too.

        Faults (from the next byte on; the first three take a direction, to-server or to-client, and apply to both
        without one):
          none | heal       carry bytes as they come; what a delay holds goes on at once, in order, also once
                            its sender has ended its stream (the end goes after it)
          delay DURATION    hold each chunk back DURATION (200ms, 1.5s, 250us, 2m; at most 10 minutes),
                            without reordering; a shorter delay brings forward what a longer one holds. Up to
                            1 MiB per direction is on its way at a time; past that the sender is not read
          partition         carry nothing; up to 1 MiB per direction is held and goes on, in order, when the
                            partition is lifted (past that the sender is no longer read, as a full TCP window would
                            stop it), and an end of stream that comes meanwhile goes on after what was held in its
                            direction. 'partition to-client' lets requests reach the server and holds its answers:
                            a lost response
          refuse            close new connections as soon as they are accepted; established ones carry on
        and one command:
          reset             cut every connection now with a TCP reset to both sides: nothing more is written and
                            each side's next read or write fails with ECONNRESET; the faults stay

        Commands come on standard input, one per line, each answered on standard output with the faults in force and
        the number of connections ('fault=delay:200ms connections=2', 'fault=to-server:none,to-client:partition
        connections=1'), or 'error: ...' for a line that is not one; 'status' only answers. End of input leaves the
        proxy running; SIGTERM, SIGINT or SIGHUP closes every connection and exits 0.

        Exit status: 0 when stopped by a signal; 2 for bad options or a --listen address that cannot be bound
        (in use, or not this machine's: the message says what to do); 1 when the proxy cannot start otherwise.

        Example: the TSP reaches the issuer through a proxy that is partitioned after a while.
          tokenet proxy --listen 127.0.0.1:7102 --to 127.0.0.1:7002 < commands.fifo &
          tsp-node --issuer 127.0.0.1:7102 ...
          echo partition > commands.fifo
        """
}
