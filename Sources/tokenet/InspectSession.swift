import Dispatch
import Foundation
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// One connection to a node for `list`, `describe` and `call`, bounded by the command's `--deadline`.
final class InspectSession: Sendable {
    /// What to do when nothing listens at a node's address, after "connection refused"; the scenario runner replaces
    /// it with the step that starts a node it stopped.
    static let startTheNodeHint =
        "; start the node, or give the address it listens on (its READY line says listen=HOST:PORT)"

    let client: RPCClient
    let options: InspectOptions
    private let loop: EventLoop
    private let deadline: ContinuousClock.Instant?
    /// Over mutual TLS: where the node's refusal of the CLI's certificate shows.
    private let refusals: CertificateRefusalWatch?
    /// One trace id for everything the command asks (its reflection lookups and its call), so that the node's log
    /// lines and a capture show one flow; `-H 'tokenet-trace-id: …'` chooses it.
    let traceID: String

    /// The longest wait for the TCP connect plus the TLS handshake when no shorter `--deadline` is given.
    static let connectTimeout = Duration.seconds(10)
    /// The longest wait for the server's hello once connected: a server that accepts and then says nothing (not a
    /// Tokenet node, or a stuck one) ends the command instead of holding it forever. Generous, because a node under
    /// load may be slow to greet, and a `--deadline` still ends the command sooner.
    static let helloTimeout = Duration.seconds(30)
    /// Ping the node after this long without hearing from it. Without pings a node cut off by the network (a
    /// partition drops packets, it sends no reset) left a call without `--deadline`, such as a `Watch`, waiting
    /// forever: TCP alone notices nothing while the CLI has nothing to send.
    static let keepaliveInterval = Duration.seconds(10)
    /// How long a ping may stay unanswered before the connection closes and its calls fail UNAVAILABLE. A node
    /// answers pings from its event loop even while its handlers are busy, so this is long only for a slow network.
    static let keepaliveTimeout = Duration.seconds(10)
    /// The limits of every connection the CLI opens to a node.
    static let timers = ConnectionTimers(
        keepaliveInterval: keepaliveInterval, keepaliveTimeout: keepaliveTimeout, helloTimeout: helloTimeout)

    private init(stream: any ByteStream, options: InspectOptions, loop: EventLoop, deadline: ContinuousClock.Instant?) {
        client = RPCClient(stream: stream, timers: Self.timers)
        refusals = stream as? CertificateRefusalWatch
        self.options = options
        self.loop = loop
        self.deadline = deadline
        traceID = options.metadata.traceID ?? Metadata.newTraceID()
    }

    /// Connects the way `options.transport` says. Failures are `CLIError.connection` with the transport's reason, or
    /// DEADLINE_EXCEEDED (an `RPCError`) when `--deadline` ran out first: then the caller's own limit ended the wait,
    /// which says nothing about whether the node can be reached.
    static func connect(_ options: InspectOptions) async throws -> InspectSession {
        let deadline = options.deadline.map { options.started + $0 }
        let loop: EventLoop
        do {
            loop = try EventLoop(name: "tokenet-cli")
        } catch {
            throw CLIError(.connection, "cannot start an event loop", cause: DescribedError(error))
        }
        do {
            let left = deadline.map { max($0 - .now, .nanoseconds(1)) }
            let stream = try await openStream(options, timeout: min(connectTimeout, left ?? connectTimeout), loop)
            return InspectSession(stream: stream, options: options, loop: loop, deadline: deadline)
        } catch {
            loop.shutdown()
            throw error
        }
    }

    /// What a person at a terminal is told when they connect with `--plaintext`, as the nodes say it loudly at
    /// start: the connection is neither encrypted nor authenticated. Not said to a script or a pipe, whose every call
    /// would carry the line, nor when stderr goes to a file.
    static func plaintextWarning(stderrIsTerminal: Bool) -> String? {
        guard stderrIsTerminal else { return nil }
        return "tokenet: warning: --plaintext: TLS is off, so nothing sent is encrypted and the node is not "
            + "authenticated; use it only for local debugging"
    }

    /// The seam where the transports differ; everything above it only sees a `ByteStream`.
    private static func openStream(_ options: InspectOptions, timeout: Duration, _ loop: EventLoop)
        async throws -> any ByteStream
    {
        switch options.transport {
        case .plaintext:
            // Debug only: nodes started with --plaintext. No certificate on either side.
            if let warning = plaintextWarning(stderrIsTerminal: isatty(2) == 1) { printError(warning) }
            do {
                return try await PlainConnection.connect(
                    host: options.address.host, port: options.address.port, on: loop,
                    options: PlainConnection.Options(connectTimeout: timeout))
            } catch {
                throw connectFailure(error, options, timeout: timeout)
            }
        case .mutualTLS(let files):
            let piped = try checkReadable(files)
            let context: TLSContext
            do {
                var configuration = TLSConfiguration.client(
                    certificateChainFile: files.certificateFile, privateKeyFile: files.keyFile,
                    trustedCAFile: files.caFile)
                configuration.contents = piped
                context = try TLSContext(configuration: configuration)
                context.onKeyLogFailure { printError("tokenet: warning: \($0)") }
            } catch let error where error.code == .configuration && error.details.isEmpty {
                // A file `TLSFileCheck` or the load found unusable: the message names it and what to give, with its
                // option, as `checkReadable` names it.
                for (flag, variable, path, kind) in tlsFiles(files)
                where error.message.hasPrefix("\(kind.name) file \(path) ") {
                    let problem = error.message.dropFirst("\(kind.name) file \(path) ".count)
                    throw CLIError(.connection, "\(flag) \(path) (given by \(flag) or \(variable)) \(problem)")
                }
                // The key log is no part of the identity, and its message says what to do.
                guard !error.message.hasPrefix("SSLKEYLOGFILE=") else { throw CLIError(.connection, error.message) }
                throw CLIError(.connection, "cannot load the TLS identity: \(error.message)")
            } catch {
                throw CLIError(.connection, "cannot load the TLS identity", cause: DescribedError(error))
            }
            // What the node would refuse only after the handshake, with a terse alert, is caught here first.
            do {
                _ = try context.checkOwnCertificate()
            } catch {
                throw CLIError(
                    .connection, "cannot use the client certificate (given by --cert or TOKENET_CERT)",
                    cause: DescribedError(error))
            }
            // The node refuses a certificate not made for TLS clients with "unsupported certificate" alone.
            if let problem = context.ownCertificateClientProblem() {
                throw CLIError(
                    .connection,
                    "cannot use the client certificate \(files.certificateFile) (given by --cert or TOKENET_CERT): it "
                        + "is not made for TLS clients (\(problem); its extended key usage lacks clientAuth), and "
                        + "every node refuses it; use one Tools/gen-certs made, such as the operator's")
            }
            do {
                return CertificateRefusalWatch(
                    try await TLSConnection.connect(
                        host: options.address.host, port: options.address.port, context: context, on: loop,
                        options: TLSConnection.Options(handshakeTimeout: timeout)))
            } catch {
                throw connectFailure(error, options, timeout: timeout)
            }
        }
    }

    /// Each TLS file is one the CLI can read and of the right kind: OpenSSL's reason for a missing one came in three
    /// error codes ("error:80000002:system library::No such file or directory; error:10000080:BIO routines::no such
    /// file; …"), and for an empty one or a certificate given as the key in others, without saying which option, or
    /// which environment variable left over from another sandbox, named it, or what was wrong with it.
    ///
    /// A pipe (`--key <(…)`, `--key /dev/stdin` fed by `|`) is read here, to its end, since it can be read only once:
    /// what it held is returned by its path, for the context to load instead of the path. It is waited for at most
    /// `pipeWait`, so a FIFO that nothing writes to is named instead of holding the command.
    private static func checkReadable(_ files: InspectOptions.TLSFiles) throws(CLIError) -> [String: [UInt8]] {
        var piped: [String: [UInt8]] = [:]
        for (flag, variable, path, kind) in tlsFiles(files) {
            let given = "\(flag) \(path) (given by \(flag) or \(variable))"
            // One pipe given twice could not be read twice.
            if piped[path] != nil { continue }
            switch TLSFileCheck.readPipe(path, holding: kind, waitingAtMost: pipeWait) {
            case .notAPipe: break
            case .read(let bytes):
                piped[path] = bytes
                continue
            case .problem(let problem): throw CLIError(.connection, "\(given) \(problem)")
            }
            var isDirectory: ObjCBool = false
            let reason: String
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                reason = String(cString: strerror(EISDIR))
            } else if access(path, R_OK) != 0 {
                reason = String(cString: strerror(errno))
            } else {
                if let problem = TLSFileCheck.problem(with: path, holding: kind) {
                    throw CLIError(.connection, "\(given) \(problem)")
                }
                continue
            }
            throw CLIError(.connection, "cannot read \(given): \(reason)")
        }
        return piped
    }

    /// How long a pipe given as a TLS file may take to be written and closed: long enough for `vault read` or
    /// `kubectl get secret` behind `<(…)`, short enough that a FIFO nobody writes to ends the command soon.
    static let pipeWait = Duration.seconds(10)

    /// Each TLS file with the option and the environment variable that give it, and what it must hold.
    /// The checks the connection makes of its TLS files, made early (before a secret is typed), in the same words.
    /// A pipe is left to the connection, which reads it once.
    static func precheckFiles(_ options: InspectOptions) throws(CLIError) {
        guard case .mutualTLS(let files) = options.transport else { return }
        for (flag, variable, path, kind) in tlsFiles(files) {
            var status = stat()
            if stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFIFO { continue }
            if let problem = TLSFileCheck.problem(with: path, holding: kind) {
                throw CLIError(.connection, "\(flag) \(path) (given by \(flag) or \(variable)) \(problem)")
            }
        }
    }

    static func tlsFiles(_ files: InspectOptions.TLSFiles)
        -> [(flag: String, variable: String, path: String, kind: TLSFileKind)]
    {
        [
            ("--cacert", InspectOptions.environmentCA, files.caFile, .caCertificates),
            ("--cert", InspectOptions.environmentCertificate, files.certificateFile, .certificate),
            ("--key", InspectOptions.environmentKey, files.keyFile, .privateKey),
        ]
    }

    /// A connection that timed out within `--deadline` (not the shorter `connectTimeout`) ran out of the caller's
    /// time: DEADLINE_EXCEEDED, as for a call. Any other failure means the node cannot be reached.
    private static func connectFailure(_ error: any Error, _ options: InspectOptions, timeout: Duration) -> any Error {
        // The wait was the deadline's when what was left of it was shorter than `connectTimeout`.
        if let error = error as? TransportError, error.code == .timeout, let deadline = options.deadline,
            deadline <= timeout || timeout < connectTimeout
        {
            return RPCError(
                .deadlineExceeded,
                "the deadline (\(DurationText.describe(deadline))) ran out while connecting to \(options.address)")
        }
        // The node's certificate failed this side's check (OpenSSL's reason alone, "self-signed certificate in
        // certificate chain", did not say which file to look at). The reason is kept in words, without its error
        // code.
        if let error = error as? TransportError, error.code == .handshakeFailed,
            error.message.hasPrefix("peer certificate rejected"), case .mutualTLS(let files) = options.transport
        {
            let remedy =
                options.caOrigin.map { "\($0) (\(files.caFile)); give the folder of the node's PKI" }
                ?? "--cacert \(files.caFile); give the CA certificate of the node's PKI (such as pki/ca.pem)"
            return CLIError(
                .connection,
                "cannot connect to \(options.address): "
                    + Self.rejectedCertificate(reason: error.message, caRemedy: remedy) + " (\(error.message))")
        }
        // A silent address: said by stage, with the time waited, rather than as one "not established in time".
        let waited =
            timeout.components.attoseconds == 0 ? "\(timeout.components.seconds) s" : DurationText.describe(timeout)
        if let error = error as? TransportError, error == .handshakeTimedOut {
            return CLIError(
                .connection,
                "cannot connect to \(options.address): it accepted the connection but did not finish the handshake "
                    + "within \(waited); check that \(options.address) is a Tokenet node's "
                    + "address (a node that is paused or overloaded answers late)")
        }
        if let error = error as? TransportError, error == .connectTimedOut {
            return CLIError(
                .connection,
                "cannot connect to \(options.address): nothing answered the connection request within "
                    + "\(waited) (a host that is down, or a firewall that drops packets); "
                    + "check the address")
        }
        // Nothing listens at the address: the commonest mistake (a node not started, or started on another port),
        // said with what to do rather than as the socket's "io: connect failed: … (errno 111)".
        if let error = error as? TransportError, error.code == .io,
            error.message.hasSuffix("(errno \(ECONNREFUSED))")
        {
            return CLIError(
                .connection,
                "cannot connect to \(options.address): nothing accepts connections there (connection refused)"
                    + Self.startTheNodeHint)
        }
        // The usual sign that the node runs with --plaintext: said with what to do, without OpenSSL's error code
        // ("wrong version number").
        if let error = error as? TransportError, error.code == .handshakeFailed, error.isRefusal,
            error.message.contains("does not speak TLS")
        {
            return CLIError(
                .connection,
                "cannot connect to \(options.address): it does not speak TLS; for a node started with --plaintext, add "
                    + "--plaintext, otherwise check that \(options.address) is a Tokenet node's address")
        }
        // The peer closed or reset the connection before the handshake finished: OpenSSL's "unexpected eof while
        // reading" or the socket's errno said neither what happened nor what to look at.
        if let error = error as? TransportError, options.transport != .plaintext, error.isCloseDuringHandshake {
            return CLIError(
                .connection,
                "cannot connect to \(options.address): it closed the connection during the TLS handshake; check that "
                    + "\(options.address) is a Tokenet node's address (a node also closes new connections at once "
                    + "while one address has the most handshakes in progress it allows, --address-handshakes), and "
                    + "if it is a fault proxy's (tokenet proxy, or a link of tokenet up), that the node behind it "
                    + "is running: a proxy closes each connection its node does not take")
        }
        return CLIError(.connection, "cannot connect to \(options.address)", cause: DescribedError(error))
    }

    /// Options for the next call: what is left of `--deadline`, the `-H` metadata and the command's trace id.
    var callOptions: CallOptions {
        var metadata = options.metadata
        metadata.setTraceID(traceID)
        return CallOptions(timeout: deadline.map { $0 - ContinuousClock.now }, metadata: metadata)
    }

    func listServices() async throws -> [String] {
        try await lookingUp {
            try await client.unary(
                ReflectionV1.Reflection.listServices, ReflectionV1.ListServicesRequest(), options: $0
            ).services
        }
    }

    func describe(_ symbol: String) async throws -> ReflectionV1.DescribeSymbolResponse {
        try await lookingUp {
            try await client.unary(
                ReflectionV1.Reflection.describeSymbol, ReflectionV1.DescribeSymbolRequest(symbol: symbol), options: $0)
        }
    }

    /// The longest a reflection lookup may take when no `--deadline` is given. A call without
    /// `--deadline` may rightly wait for good (a `Watch`), but a lookup is answered from the node's own tables: a server
    /// that keeps the connection up and never answers one would hold `list`, `describe` or `call` forever.
    static let lookupTimeout = Duration.seconds(30)

    /// Runs a reflection lookup with `callOptions` bounded by `lookupTimeout`, which, when it is what ran out, is
    /// named in the DEADLINE_EXCEEDED (not a deadline the person never gave).
    private func lookingUp<Response>(_ lookup: (CallOptions) async throws -> Response) async throws -> Response {
        var options = callOptions
        let bounded = options.timeout == nil
        if bounded { options.timeout = Self.lookupTimeout }
        do {
            return try await lookup(options)
        } catch let error as RPCError where bounded && error.code == .deadlineExceeded {
            throw RPCError(
                .deadlineExceeded,
                "\(self.options.address) did not answer a reflection lookup within "
                    + "\(Self.lookupTimeout.components.seconds) s; give --deadline to wait longer")
        }
    }

    /// Closes the connection gracefully, but waits no longer than `closeLimit` for a peer that does not answer, or for
    /// a close that never returns (after a TLS alert it sometimes did not, and the command hung after its answer).
    func close() async {
        let client = client
        _ = await waitAtMost(Self.closeLimit) { await client.close() }
        loop.shutdown()
    }

    /// The longest wait for a graceful close.
    static let closeLimit = Duration.seconds(1)

    /// Connects, runs `body`, closes. A non-OK status from `body` prints `ERROR: CODE: message` on stderr and gives
    /// exit status 64 + code, as grpcurl does. A stop signal (Ctrl-C) cancels the work, closes the connection in order
    /// and then ends the command by that signal (`CommandInterruption`), printing nothing more.
    ///
    /// With `tracedFailures` (the party commands, which print a call's trace id with its answer), a status from the
    /// node is followed by `(trace ID)` too: a failed call is when its trace id is wanted, to find it in the logs.
    static func run(
        _ options: InspectOptions, tracedFailures: Bool = false,
        _ body: @escaping @Sendable (InspectSession) async throws -> Int32
    ) throws(CLIError) -> Int32 {
        let interruption = CommandInterruption()
        let outcome: Result<Int32, CLIError>? = runBlocking {
            // The session is closed outside the cancelled work: a cancelled task would cut the goaway short.
            let (session, result) = await interruption.run { () -> (InspectSession?, Result<Int32, CLIError>?) in
                let session: InspectSession
                do {
                    session = try await connect(options)
                } catch {
                    return (nil, interruption.received == nil ? finish(with: error) : nil)
                }
                do {
                    return (session, .success(try await body(session)))
                } catch  where interruption.received != nil {
                    return (session, nil)
                } catch {
                    let wrongNode = await session.wrongNode(behind: error)
                    let shown =
                        session.refusal(behind: error) ?? session.silence(behind: error)
                        ?? session.ungreeted(behind: error) ?? wrongNode ?? session.commandDeadline(behind: error)
                        ?? error
                    let result = finish(with: shown)
                    // A call refused before it was sent has no line in any node's log to find by its trace id.
                    if tracedFailures, let rpc = shown as? RPCError, !(rpc.cause is NothingSent) {
                        printError("(trace \(session.traceID))")
                    }
                    return (session, result)
                }
            }
            await session?.close()
            return result
        }
        if let number = interruption.received { CommandInterruption.die(by: number) }
        // Without a signal the work always has a result.
        return try outcome!.get()
    }

    /// The node's refusal of the CLI's certificate when that is what ended the connection `error` reports: a
    /// certificate to fix (exit status 1, as for unusable certificate files), not an unavailable node.
    private func refusal(behind error: any Error) -> CLIError? {
        guard let error = error as? RPCError, error.code == .unavailable, let refusal = refusals?.refusal,
            case .mutualTLS(let files) = options.transport
        else { return nil }
        return CLIError(
            .connection, "\(options.address): \(refusal.message); check --cert \(files.certificateFile)")
    }

    /// The peer's leaving, or saying something that is not Tokenet, before its hello, when that is what ended the
    /// connection `error` reports: the node was never reached as a Tokenet node (most often a TLS node given
    /// `--plaintext`), exit status 1 as the help says and as the opposite mistake fails ("it does not speak TLS"),
    /// where it came out as a call's UNAVAILABLE (78). The transport's words, with their hint, are kept.
    private func ungreeted(behind error: any Error) -> CLIError? {
        // A node that greeted the CLI answered: its UNAVAILABLE may quote a connection of its own that ended before
        // its peer's hello ("the TSP's ChangeTokenState failed: … before its hello"), which is that node's peer's
        // failure, not the CLI's, and stays the call's status (78).
        guard let error = error as? RPCError, error.code == .unavailable, !client.peerGreeted else { return nil }
        let told = ["before its hello", "no hello from the peer", "not a Tokenet frame"].contains(
            where: error.message.contains)
        // A hello that came but could not be accepted (a protocol version or frame limit this side refuses).
        let refusedHello = ["is not supported; this node speaks", "is below the minimum of"].contains(
            where: error.message.contains)
        let said =
            told
            ? error.message
            : refusedHello
                ? "its Tokenet hello could not be accepted: \(error.message)"
                : "it sent no Tokenet hello: \(error.message)"
        return CLIError(.connection, "cannot connect to \(options.address): \(said)")
    }

    /// DEADLINE_EXCEEDED told against the command's deadline (`--deadline`, or a party command's 30 s), the one the
    /// person knows: a call's own deadline is what was left of it once connecting and reflection were done, so
    /// `--deadline 3ms` ended with "did not finish within its deadline (143 µs)", a limit nobody had given.
    private func commandDeadline(behind error: any Error) -> RPCError? {
        guard let error = error as? RPCError, error.code == .deadlineExceeded, let deadline = options.deadline else {
            return nil
        }
        return DeadlineText.toldAgainstCommandDeadline(error.message, given: DurationText.describe(deadline)).map {
            RPCError(.deadlineExceeded, $0)
        }
    }

    /// The node's silence when that is what ended the connection `error` reports: the keepalive ping went
    /// unanswered, which the RPC layer words for its own log ("no answer to keepalive ping"); a person at the CLI
    /// learns here which node stopped answering and for how long. Still UNAVAILABLE (exit status 78), unless the
    /// peer never sent its hello: then no Tokenet node was reached, exit status 1, as when one sends something else
    /// or does not finish the TLS handshake (`ungreeted`).
    private func silence(behind error: any Error) -> (any Error)? {
        // This side's connection, not a node passing on its own link's failure in the same words.
        guard let error = error as? RPCError, error.code == .unavailable, error.connectionEndedHere,
            error.message.contains("no answer to keepalive ping")
        else { return nil }
        // The node closed the connection for this client's silence (its goaway gave the reason): the command was
        // suspended (Ctrl-Z) or its network went away for longer than the node's keepalive allows. It was told
        // that the node had stopped answering.
        if error.message.contains("the peer closed the connection") {
            return RPCError(
                .unavailable,
                "\(options.address) closed the connection: this command did not answer its keepalive ping in time "
                    + "(was the command stopped, with Ctrl-Z say, or the network to the node down?)")
        }
        let silent = Self.keepaliveInterval + Self.keepaliveTimeout
        if error.message.contains("no hello from the peer") {
            return CLIError(
                .connection,
                "cannot connect to \(options.address): it accepted the connection but sent no hello within "
                    + "\(silent.components.seconds) s (nor answered a keepalive ping): check that \(options.address) is a "
                    + "Tokenet node's address; the connection was closed")
        }
        return RPCError(
            .unavailable,
            "\(options.address) stopped answering: nothing heard for \(silent.components.seconds) s, and a keepalive "
                + "ping went unanswered (the node or the network to it is down); the connection was closed")
    }

    /// A status prints and gives 64 + code; a `CLIError` passes through; anything else is a failed call.
    /// The most status details printed: a status may carry any number, and each takes a line.
    static let detailsShown = 20

    /// One detail of a status, as a line: `detail TYPE: JSON` when this build knows its type (Protos/), with card
    /// numbers and secret fields masked as `decode` masks them; else its size alone: bytes whose fields cannot be
    /// told may hold a card number or a code, which base64 only hid from a reader who did not decode it. Like the
    /// message, it is the peer's text: masked and escaped.
    static func shown(_ detail: WireV1.StatusDetail) -> String {
        let type = detail.type.isEmpty ? "(no type)" : detail.type
        guard let known = ProtoRegistry.messageType(named: detail.type) else {
            return "detail \(shownStatusMessage(type)): \(detail.value.count) bytes, a type this build does not know "
                + "(not shown)"
        }
        guard let json = try? known.init(serializedBytes: detail.value).jsonString() else {
            return "detail \(shownStatusMessage(type)): \(detail.value.count) bytes that are not a valid "
                + "\(shownStatusMessage(type)) (not shown)"
        }
        return "detail \(shownStatusMessage(type)): "
            + shownStatusMessage(SecretFields.maskedJSON(json, as: known, .confirmed))
    }

    private static func finish(with error: any Error) -> Result<Int32, CLIError> {
        switch error {
        case let error as RPCError: .success(report(error))
        case let error as CLIError: .failure(error)
        default: .failure(CLIError(.connection, "the call failed", cause: DescribedError(error)))
        }
    }

    /// Prints a call's non-OK status and returns its exit status: 64 + code for the gRPC codes.
    ///
    /// A code outside them (from a peer's bug or a later protocol) prints as `CODE_N` and exits as UNKNOWN (66): 64 + N
    /// is no exit status for such a code, and the shell would wrap it to another one — 64 + 192 to 0, success.
    static func report(_ error: RPCError) -> Int32 {
        let name = error.code.protoValueName ?? "CODE_\(error.code.rawValue)"
        // A status message often quotes what the caller sent (`this node does not serve …`): its line breaks too
        // are escaped, so that it cannot print a line of its own, and it is cut short (`shownStatusMessage`).
        // A status without a message (some servers send none) prints as its code alone, not with a dangling ": ".
        printError(error.message.isEmpty ? "ERROR: \(name)" : "ERROR: \(name): \(shownStatusMessage(error.message))")
        for detail in error.details.prefix(Self.detailsShown) { printError("  " + Self.shown(detail)) }
        if error.details.count > Self.detailsShown {
            printError("  (\(error.details.count - Self.detailsShown) more details not shown)")
        }
        guard case .unrecognized = error.code else { return 64 + error.code.rawValue }
        return 64 + StatusCode.unknown.rawValue
    }

    /// What is wrong with a node certificate this side refused, by OpenSSL's reason: every refusal read "its
    /// certificate is not signed by the CA of --cacert", also for one that had expired or was made for clients only.
    static func rejectedCertificate(reason: String, caRemedy: String) -> String {
        if reason.contains("certificate has expired") {
            return "its certificate has expired; the node needs a new one (Tools/gen-certs)"
        }
        if reason.contains("certificate is not yet valid") {
            return "its certificate is not valid yet; check the clocks of this machine and of the node's"
        }
        if reason.contains("unsuitable certificate purpose") {
            return "its certificate is not made for a server (its extended key usage lacks serverAuth); give the "
                + "node a certificate made by Tools/gen-certs"
        }
        if reason.contains("key too small") || reason.contains("md too weak") {
            return "its certificate's key or signature is too weak for OpenSSL's security level; give the node a "
                + "certificate made by Tools/gen-certs"
        }
        return "its certificate is not signed by the CA of \(caRemedy)"
    }
}
