import Foundation
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// Options shared by `tokenet list`, `describe` and `call`: the node's address, how to reach it, and call settings.
struct InspectOptions: Sendable {
    /// The files of the operator's mutual-TLS identity.
    struct TLSFiles: Sendable, Equatable {
        var caFile: String
        var certificateFile: String
        var keyFile: String
    }

    /// How the CLI reaches the node.
    enum Transport: Sendable, Equatable {
        case mutualTLS(TLSFiles)
        case plaintext
    }

    var address: HostPort
    /// The arguments after ADDR (SERVICE, SYMBOL or METHOD).
    var operands: [String]
    var transport: Transport
    /// Bounds the whole command: reading `-d @`, connecting, reflection and the call.
    var deadline: Duration?
    /// When the command began, which `deadline` counts from.
    var started = ContinuousClock.now
    var metadata = Metadata()
    /// `-d`: request JSON, or "@" for standard input; nil sends one empty request.
    var data: String?
    /// `-v` (`call` only): what the call sent and how it ended, on standard error (`CallCommand+Verbose.swift`).
    var verbose = false
    /// `--emit-defaults` (`call` only): responses print every field, those at their default value too.
    var emitDefaults = false
    /// Where the CA certificate came from, as a refusal of the node's certificate names it: `--cacert FILE`, or
    /// the folder a command was given its PKI in (a scenario's `--pki DIR`).
    var caOrigin: String?
    /// The kind of node a party command talks to (`tokenet wallet …`: a wallet-node), whose certificate's role is
    /// checked before anything is sent (`PartySession`); nil for `call`, `list` and `describe`, which talk to any.
    var party: PeerRole?

    /// The node a party command's group talks to, by the command's first word.
    static func party(of command: String) -> PeerRole? {
        switch command.split(separator: " ").first {
        case "wallet": .wallet
        case "issuer", "issuer-app": .issuer
        case "tsp": .tsp
        default: nil
        }
    }

    /// The most bytes of `-H` metadata a call takes: the call_start's limit, less room for the method, the trace
    /// id, the deadline and the encoding's own bytes.
    static let headerLimit = FrameFormat.maximumCallStartSize - 4096

    /// The bytes of `value` as a protobuf varint.
    static func varintSize(_ value: Int) -> Int {
        var size = 1
        var rest = value >> 7
        while rest > 0 {
            size += 1
            rest >>= 7
        }
        return size
    }

    static let environmentCA = "TOKENET_CACERT"
    static let environmentCertificate = "TOKENET_CERT"
    static let environmentKey = "TOKENET_KEY"

    /// The help lines for the connection options every inspecting command takes.
    static let connectionHelp = """
          --cacert FILE        CA certificate that signed the node's certificate (default: $TOKENET_CACERT).
          --cert FILE          Client certificate, such as the operator's (default: $TOKENET_CERT).
          --key FILE           Private key of --cert (default: $TOKENET_KEY).
          --plaintext          Connect without TLS, to a node started with --plaintext.
          --deadline DURATION  Give up after DURATION, such as 5s, 200ms, 1m or 1m30s; at most 24h (default:
                               none).
          -H 'KEY: VALUE'      Add request metadata; repeatable.
          --help               Show this help.
        """

    /// The connection options as the party commands (`wallet`, `issuer`, `issuer-app`, `tsp`) take them: a node
    /// answers their methods only to a client certificate, so over plaintext every one is PERMISSION_DENIED, which
    /// the help says rather than offering --plaintext as it does for list, describe and call.
    /// Their deadline has a default (`PartySession.defaultDeadline`), which the help gives in place of "none".
    static let partyConnectionHelp = connectionHelp.replacingOccurrences(
        of: "  --plaintext          Connect without TLS, to a node started with --plaintext.\n",
        with: "  --plaintext          Connect without TLS, to a node started with --plaintext, which refuses these\n"
            + "                       commands (PERMISSION_DENIED): it takes them only from a client certificate.\n"
            + "                       A command that would send a card number, CVC, PIN or code is refused\n"
            + "                       before it sends it.\n"
    ).replacingOccurrences(
        of: "(default:\n                       none).",
        with: "(default:\n                       \(PartySession.defaultDeadline.components.seconds)s).")

    /// The options parsed here that take their value as the next argument (`Subcommand.valuedOptions`).
    static let valuedFlags: Set<String> = [
        "--cacert", "--cert", "--key", "--deadline", "-H", "--header", "-d", "--data",
    ]

    /// The valued options that may be given more than once: each `-H` adds an entry.
    static let repeatableFlags: Set<String> = ["-H", "--header"]

    /// Parses `arguments`; `operands` is how many arguments after ADDR the command takes (a range), `names` what
    /// they are (METHOD, SYMBOL) for messages about a missing or empty one, and `takesData` whether `-d` is allowed.
    /// A message quotes what was typed with a card number in it masked (`maskPAN`), as the request JSON's errors do:
    /// one typed where the address, the method or an option's value goes must not be echoed to the terminal and
    /// whatever records it. File names are quoted as given: they are what to act on, and masking would garble one
    /// with a long run of digits (a UUID).
    init(
        parsing arguments: [String], command: String, operands range: ClosedRange<Int>, named names: [String] = [],
        takesData: Bool = false, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CLIError) {
        party = Self.party(of: command)
        var positional: [String] = []
        var caFile = environment[Self.environmentCA]
        var certificateFile = environment[Self.environmentCertificate]
        var keyFile = environment[Self.environmentKey]
        var plaintext = false
        /// The certificate options given on the command line, as typed, for `--plaintext` to refuse.
        var certificateOptions: [String] = []
        var scanner = ArgumentScanner(
            arguments, command: command, valued: Self.valuedFlags, repeatable: Self.repeatableFlags)
        while let item = try scanner.next() {
            switch item {
            case .valued("--cacert", let value):
                caFile = value
                certificateOptions.append("--cacert \(value)")
            case .valued("--cert", let value):
                certificateFile = value
                certificateOptions.append("--cert \(value)")
            case .valued("--key", let value):
                keyFile = value
                certificateOptions.append("--key \(value)")
            case .valued("--deadline", let value): deadline = try Self.duration(value, command: command)
            case .valued("-H", let value), .valued("--header", let value):
                try Self.addHeader(value, to: &metadata, command: command)
            case .valued("-d", let value) where takesData, .valued("--data", let value) where takesData:
                guard data == nil else { throw CLIError(.usage, "\(command): -d may be given once") }
                data = value
            case .flag("-v", let inline) where takesData, .flag("--verbose", let inline) where takesData:
                guard inline == nil else { throw CLIError(.usage, "\(command): -v takes no value") }
                verbose = true
            case .flag("--emit-defaults", let inline) where takesData:
                guard inline == nil else { throw CLIError(.usage, "\(command): --emit-defaults takes no value") }
                emitDefaults = true
            case .flag("--plaintext", let inline):
                // A switch: `--plaintext=false` must not turn plaintext on, as ignoring the value did.
                guard inline == nil else { throw CLIError(.usage, "\(command): --plaintext takes no value") }
                plaintext = true
            case .flag("--help", _?), .flag("-h", _?):
                // Said as a switch given a value: "unknown option '--help'" read as if --help did not exist.
                throw CLIError(.usage, "\(command): --help takes no value")
            case .flag(let flag, nil) where flag.hasPrefix("-v=") && takesData:
                // The scanner keeps a short switch's `=`: said as a switch given a value, not "unknown option '-v=1'".
                throw CLIError(.usage, "\(command): -v takes no value")
            case .flag(let flag, nil) where flag.hasPrefix("-h="):
                throw CLIError(.usage, "\(command): --help takes no value")
            case .valued(let flag, _), .flag(let flag, _):
                if let meant = Self.optionMeant(by: flag) {
                    let typed = flag.prefix { $0 != "=" }
                    throw CLIError(
                        .usage, "\(command): unknown option '\(maskPAN(String(typed)))'; did you mean \(meant)?")
                }
                throw CLIError(.usage, "\(command): unknown option '\(maskPAN(flag))'")
            case .endOfOptions: continue
            case .operand(let operand): positional.append(operand)
            }
        }
        // The node refuses a call_start past its limit with RESOURCE_EXHAUSTED (status 72), in the wire's words,
        // for what is the command line's mistake: said here, naming -H.
        // Counted as the call_start encodes them: each entry's key and value with their tags and lengths, and the
        // entry's own; the bytes alone let thousands of short entries past, to the node's refusal.
        let headerBytes = metadata.entries.reduce(0) { total, entry in
            let valueBytes: Int
            switch entry.value {
            case .text(let text): valueBytes = text.utf8.count
            case .binary(let bytes): valueBytes = bytes.count
            }
            let keyBytes = entry.key.utf8.count
            let body = 1 + Self.varintSize(keyBytes) + keyBytes + 1 + Self.varintSize(valueBytes) + valueBytes
            return total + 1 + Self.varintSize(body) + body
        }
        if headerBytes > Self.headerLimit {
            throw CLIError(
                .usage,
                "\(command): -H: the metadata add up to \(headerBytes) bytes; a call takes at most \(Self.headerLimit) "
                    + "(its method, metadata and deadline share \(FrameFormat.maximumCallStartSize) bytes)")
        }
        guard let first = positional.first else { throw CLIError(.usage, "\(command): missing ADDR (HOST:PORT)") }
        guard let address = HostPort(parsing: first) else {
            if let port = HostPort.portPastRange(in: first) {
                throw CLIError(
                    .usage,
                    "\(command): '\(maskPAN(first))' has port \(port), past the last port (65535); give the port "
                        + "the node listens on (its READY line says listen=HOST:PORT)")
            }
            // A URL pasted from elsewhere (http://host:port, grpc://…): the scheme is what is in the way.
            if let scheme = first.range(of: "://"),
                let hostPort = HostPort(parsing: String(first[scheme.upperBound...].prefix { $0 != "/" }))
            {
                throw CLIError(
                    .usage,
                    "\(command): '\(maskPAN(first))' is a URL; give the address alone, HOST:PORT, such as "
                        + "\(maskPAN(hostPort.description))")
            }
            throw CLIError(
                .usage,
                "\(command): '\(maskPAN(first))' is not an address of the form HOST:PORT (an IPv6 address goes in "
                    + "brackets: [::1]:7001)")
        }
        if let zone = address.zoneRefusal {
            throw CLIError(.usage, "\(command): '\(maskPAN(first))' \(zone)")
        }
        guard address.hostIsIPOrName else {
            throw CLIError(
                .usage,
                "\(command): '\(maskPAN(first))' is not an IP address or host name with a port, "
                    + "such as 127.0.0.1:7001, [::1]:7001 or tsp.internal:7001"
            )
        }
        guard address.port != 0 else {
            throw CLIError(
                .usage, "\(command): '\(maskPAN(first))' has port 0, which no node listens on; give the node's port")
        }
        self.address = address
        operands = Array(positional.dropFirst())
        try Self.check(operands, range, names, command: command)
        if plaintext {
            // A certificate option with --plaintext contradicts it (grpcurl refuses the pair too): the file went unused
            // without a word, so a command meant for a TLS node ran without TLS. The environment's files are exported
            // for the whole shell, and stay unused here.
            guard certificateOptions.isEmpty else {
                let flags = certificateOptions.map { $0.prefix { $0 != " " } }.joined(separator: " and ")
                throw CLIError(
                    .usage,
                    "\(command): --plaintext connects without TLS, so \(certificateOptions.joined(separator: ", ")) "
                        + "would not be used; drop --plaintext to connect over mutual TLS, or drop \(flags)")
            }
            transport = .plaintext
        } else {
            let missing = [("--cacert", caFile), ("--cert", certificateFile), ("--key", keyFile)]
                .filter { $0.1?.isEmpty ?? true }.map(\.0)
            guard let caFile, let certificateFile, let keyFile, missing.isEmpty else {
                throw CLIError(
                    .usage,
                    "\(command): mutual TLS needs --cacert, --cert and --key (or \(Self.environmentCA), "
                        + "\(Self.environmentCertificate), \(Self.environmentKey)); missing "
                        + missing.joined(separator: ", ")
                        // Where a person who started a sandbox finds them: the variables are in a file of its own.
                        + (missing.count == 3 ? " (for a sandbox of tokenet up, source DIR/sandbox.env first)" : ""))
            }
            transport = .mutualTLS(TLSFiles(caFile: caFile, certificateFile: certificateFile, keyFile: keyFile))
        }
    }

    /// The option meant by `flag` written as grpcurl writes its flags, with one dash (`-plaintext`, `-cacert=ca.pem`),
    /// or by one of grpcurl's names for an option of ours; nil for any other.
    static func optionMeant(by flag: String) -> String? {
        guard !flag.hasPrefix("--") else { return nil }
        let name = String(flag.prefix { $0 != "=" })
        let grpcurl = ["-max-time": "--deadline (such as 5s)", "-rpc-header": "-H", "-reflect-header": "-H"]
        if let meant = grpcurl[name] { return meant }
        let long = "-" + name
        return valuedFlags.union(["--plaintext", "--help", "--emit-defaults"]).contains(long) ? long : nil
    }

    /// Too few operands names the first missing one; too many names the extra ones; an empty one is never meant.
    private static func check(_ operands: [String], _ range: ClosedRange<Int>, _ names: [String], command: String)
        throws(CLIError)
    {
        func name(_ index: Int) -> String { index < names.count ? names[index] : "argument \(index + 1) after ADDR" }
        guard operands.count >= range.lowerBound else {
            throw CLIError(.usage, "\(command): missing \(name(operands.count)) after the address")
        }
        guard operands.count <= range.upperBound else {
            throw CLIError(
                .usage,
                "\(command): unexpected arguments: \(maskPAN(operands[range.upperBound...].joined(separator: " ")))")
        }
        if let empty = operands.firstIndex(of: "") {
            throw CLIError(.usage, "\(command): \(name(empty)) is empty")
        }
    }

    /// `5s`, `200ms`, `1.5s`, `2m`, `1h`, `500us`, or several parts such as `1m30s` (`DurationSyntax`): a positive
    /// duration of at most a day.
    static func duration(_ text: String, command: String) throws(CLIError) -> Duration {
        guard let seconds = DurationSyntax.seconds(in: text), seconds > 0 else {
            let unitMissing = DurationSyntax.hint(for: text, positive: true).map { " (\(maskPAN($0)))" } ?? ""
            throw CLIError(
                .usage,
                "\(command): --deadline: expected a positive duration such as 5s, 200ms, 1m or 1m30s, got "
                    + "'\(maskPAN(text))'" + unitMissing)
        }
        guard seconds <= 86_400 else {
            throw CLIError(
                .usage, "\(command): --deadline: '\(maskPAN(text))' is longer than the limit of one day (24h)")
        }
        return .nanoseconds(Int64(max(1, (seconds * 1e9).rounded())))
    }

    /// `KEY: VALUE`; keys are case-insensitive and sent in lowercase. A key ending in `-bin` takes its value in
    /// base64 and sends the bytes as a binary entry, as grpcurl does for gRPC's binary headers: metadata entries are
    /// text or binary, and without this no binary entry could be sent (`x-bin: AQID` went out as the text "AQID").
    static func addHeader(_ text: String, to metadata: inout Metadata, command: String) throws(CLIError) {
        guard let colon = text.firstIndex(of: ":") else {
            throw CLIError(.usage, "\(command): -H: expected 'KEY: VALUE', got '\(maskPAN(text))'")
        }
        let key = text[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty else {
            // `:authority: x` (an HTTP/2 pseudo-header) split at its first colon, leaving no key to name.
            throw CLIError(
                .usage, "\(command): -H: '\(maskPAN(text))' has no key before its first ':'; write it as 'KEY: VALUE'")
        }
        guard Metadata.isValidKey(key) else {
            throw CLIError(
                .usage, "\(command): -H: '\(maskPAN(key))' is not a valid metadata key (letters, digits, '-', '_', '.')"
            )
        }
        try checkRuntimeKey(key, value, command: command)
        if key == Metadata.traceIDKey, let earlier = metadata[text: key] {
            // A call has one trace id; the node would take the first and drop the other unsaid.
            guard earlier == value else {
                throw CLIError(
                    .usage,
                    "\(command): -H: \(key) is given twice ('\(maskPAN(earlier))' and '\(maskPAN(value))'); a call has "
                        + "one trace id")
            }
            return
        }
        guard key.hasSuffix("-bin") else {
            // A line break or other control character in a text value is a slip of the shell (`$'a\nb'`), and would
            // reach the node's handlers as it is; bytes go in a `-bin` key.
            if let control = value.unicodeScalars.first(where: {
                $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}"
            }) {
                let code = String(format: "U+%04X", control.value)
                throw CLIError(
                    .usage,
                    "\(command): -H: the value of '\(key)' holds a control character or line separator (\(code)); "
                        + "text values are printable text, and bytes go in a key ending in -bin, as base64")
            }
            metadata.add(key, .text(value))
            return
        }
        guard let bytes = base64(value) else {
            throw CLIError(
                .usage,
                "\(command): -H: '\(maskPAN(key))' ends in -bin, so its value is bytes written in base64, and this value is "
                    + "not base64")
        }
        metadata.add(key, .binary(bytes))
    }

    /// Keys starting with `tokenet-` belong to the runtime, and the one a caller may set, the trace id, has a form:
    /// both are checked here, as bad options (status 2), before the node refuses the command's first call with
    /// INVALID_ARGUMENT. The value is quoted with a card number in it masked: a trace id ends up in every log.
    private static func checkRuntimeKey(_ key: String, _ value: String, command: String) throws(CLIError) {
        guard key.hasPrefix(Metadata.reservedPrefix) else { return }
        guard key == Metadata.traceIDKey else {
            throw CLIError(
                .usage,
                "\(command): -H: '\(maskPAN(key))' uses the prefix \(Metadata.reservedPrefix), which is reserved for the "
                    + "runtime's own keys; the one -H may set is \(Metadata.traceIDKey)")
        }
        guard Metadata.isValidTraceID(value) else {
            let lengths = Metadata.traceIDLengths
            throw CLIError(
                .usage,
                "\(command): -H: \(Metadata.traceIDKey) must be \(lengths.lowerBound) to \(lengths.upperBound) "
                    + "lowercase hex digits with at least one of a-f, such as 4bf92f3577b34da6; got '\(maskPAN(value))'"
            )
        }
        // Carried as it is, but an id whose digits the nodes' logs take for a card number shows masked there (by
        // the same `maskPAN` the logs use), and an id chosen to find the call in them could not be found.
        let logged = maskPAN(value)
        if logged != value {
            printError(
                "tokenet: \(command): note: the \(Metadata.traceIDKey) holds digits the nodes' logs mask as a possible "
                    + "card number (it shows as '\(logged)' there); choose one without such a run of digits to find "
                    + "the call in the logs")
        }
    }

    /// Standard or URL-safe base64, padding optional: what proto3 JSON takes for bytes, read the same way (`=` only
    /// as padding at the end; `Data(base64Encoded:)` read `====` as a zero byte).
    private static func base64(_ text: String) -> Data? {
        ProtoJSONBase64.decode(text)
    }
}
