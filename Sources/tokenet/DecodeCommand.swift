import Foundation
import TokenetNode
import TokenetWire

/// `tokenet decode`: Tokenet bytes (frames as they travel inside TLS, or one message) as JSON, with no node, from
/// the message types this build was generated from (Protos/).
enum DecodeCommand {
    static let subcommand = Subcommand(
        name: "decode",
        summary: "Decode Tokenet frames or one message (raw, hex or base64 bytes) into JSON, without a node.",
        help: help,
        valuedOptions: Options.valuedFlags
    ) { arguments throws(CLIError) in
        let options = try Options(parsing: arguments)
        let input = try read(options.file)
        let bytes = try DecodeInput.bytes(input, encoding: options.encoding, file: options.file)
        if let type = options.type {
            printOut(
                try notText(input, named: options.file, options) { () throws(CLIError) in
                    let json = SecretFields.maskedJSON(try message(bytes, as: type), as: type, .confirmed)
                    // Hex or base64 text given without its flag often reads as a message of fields the type does not
                    // have, which printed as {} with status 0: such a reading fails here, and `notText` says which
                    // flag to add. Text that is a message of the type's own fields (an id of hex digits) stands.
                    if options.encoding == .raw, DecodeInput.textEncoding(of: input) != nil,
                        !keepsEveryByte(bytes, as: type)
                    {
                        throw CLIError(.data, "decode: the bytes hold fields a \(type.protoName) does not have")
                    }
                    if !keepsEveryByte(bytes, as: type) {
                        printError(
                            "decode: note: the bytes hold fields \(type.protoName) (or a message in it) does not have, "
                                + "not shown (another "
                                + "message type, or a peer built from newer .proto files?)")
                    }
                    return json
                })
            return 0
        }
        var answered = ClientCalls()
        if let file = options.callsFile {
            let client = try read(file)
            answered = try notText(client, named: file, options) { () throws(CLIError) in
                try calls(in: try DecodeInput.bytes(client, encoding: options.encoding, file: file), file: file)
            }
            // The two sides given the wrong way round decoded nothing as a response, with status 0 and only a note
            // that pointed back at --calls. A client's side whose capture began after its calls did holds none
            // either, so the note allows for that too.
            if answered.known.isEmpty && answered.unknown.isEmpty {
                printError(
                    "decode: note: --calls \(file) holds no call_start: it is the server's side of the connection "
                        + "(were the two sides swapped?), or the client's side captured after its calls began, "
                        + "whose methods only --method can name")
            }
        }
        try notText(input, named: options.file, options) { () throws(CLIError) in
            try frames(bytes, answering: answered, method: options.method)
        }
        return 0
    }

    /// Runs `decode`; when it fails on raw input that is hex or base64 text, says to give --hex or --base64: the
    /// text's first characters read as a length prefix of hundreds of megabytes, which the frame decoder reported as
    /// a peer that "does not speak Tokenet".
    static func notText<T>(
        _ input: [UInt8], named file: String?, _ options: Options, _ decode: () throws(CLIError) -> T
    ) throws(CLIError) -> T {
        do {
            return try decode()
        } catch {
            guard options.encoding == .raw else { throw error }
            let name = file.map { $0 == "-" ? "standard input" : $0 } ?? "standard input"
            if let format = DecodeInput.followFormat(input) {
                throw DecodeInput.followOutputError(format, flag: name)
            }
            let encoding =
                options.type == nil ? DecodeInput.frameTextEncoding(of: input) : DecodeInput.textEncoding(of: input)
            if let flag = encoding {
                throw CLIError(.usage, "decode: \(name) holds \(flag) text, not bytes: add --\(flag)")
            }
            if options.type == nil, DecodeInput.startsWithText(input) {
                throw CLIError(
                    .data,
                    "decode: \(name) holds text, not Tokenet frames (whose length prefix starts with a zero byte); "
                        + "give the bytes of one side of a connection, or hex or base64 of them with --hex or --base64")
            }
            throw error
        }
    }

    struct Options {
        var encoding = DecodeInput.Encoding.raw
        var type: (any ProtoMessage.Type)?
        var method: AnyMethodDescriptor?
        var callsFile: String?
        var file: String?

        /// The options that take a value (`ArgumentScanner`).
        static let valuedFlags: Set<String> = ["--type", "--calls", "--method"]

        init(parsing arguments: [String]) throws(CLIError) {
            var scanner = ArgumentScanner(arguments, command: "decode", valued: Self.valuedFlags)
            var encodings: [DecodeInput.Encoding] = []
            while let item = try scanner.next() {
                switch item {
                case .flag("--hex", nil): encodings.append(.hex)
                case .flag("--base64", nil): encodings.append(.base64)
                case .valued("--type", let name):
                    // Also as protobuf writes a full name, with a leading dot (`.tokenet.health.v1.HealthCheckResponse`).
                    let unqualified = name.hasPrefix(".") ? String(name.dropFirst()) : name
                    guard let type = ProtoRegistry.messageType(named: unqualified) else {
                        if ProtoRegistry.enumType(named: unqualified) != nil {
                            throw CLIError(
                                .usage,
                                "decode: --type: \(Self.shown(name)) is an enum, not a message: give the message that "
                                    + "holds it")
                        }
                        if let wirePath = try? CallCommand.methodPath(unqualified), let method = Self.method(wirePath) {
                            throw CLIError(
                                .usage,
                                "decode: --type: \(Self.shown(name)) is a method, not a message: give its request "
                                    + "(\(method.request.protoName)) or response (\(method.response.protoName)) type, "
                                    + "or the method with --method to decode frames")
                        }
                        if ProtoRegistry.service(named: unqualified) != nil {
                            throw CLIError(
                                .usage,
                                "decode: --type: \(Self.shown(name)) is a service, not a message: give one of its "
                                    + "methods' request or response types (tokenet describe ADDR \(unqualified) "
                                    + "lists them), or the method with --method to decode frames")
                        }
                        throw CLIError(
                            .usage,
                            "decode: --type: this build has no message \(Self.shown(name))"
                                + Self.messageMeant(by: name)
                        )
                    }
                    self.type = type
                case .valued("--calls", let file): callsFile = file
                case .valued("--method", let path):
                    // Written as tokenet call takes it (pkg.Service/Method, pkg.Service.Method), a method this build
                    // knows was refused as unknown for its missing leading slash.
                    guard let wirePath = try? CallCommand.methodPath(path), let method = Self.method(wirePath) else {
                        throw CLIError(
                            .usage,
                            "decode: --method: this build has no method \(Self.shown(path)) (/package.Service/Method)"
                                + Self.methodMeant(by: path))
                    }
                    self.method = method
                case .flag(let flag, let inline) where ["--hex", "--base64"].contains(flag) && inline != nil:
                    throw CLIError(.usage, "decode: \(flag) takes no value")
                case .valued(let flag, _), .flag(let flag, _):
                    throw CLIError(
                        .usage,
                        "decode: unknown option \(Self.shown(flag))"
                            + ArgumentScanner.singleDashHint(
                                flag, options: Self.valuedFlags.union(["--hex", "--base64"])))
                case .endOfOptions: continue
                case .operand(let argument):
                    guard file == nil else { throw CLIError(.usage, "decode: one FILE at most") }
                    file = argument
                }
            }
            // The same flag twice is harmless; both are a contradiction.
            guard encodings.allSatisfy({ $0 == encodings.first }) else {
                throw CLIError(.usage, "decode: give --hex or --base64, not both")
            }
            guard type == nil || (method == nil && callsFile == nil) else {
                throw CLIError(
                    .usage, "decode: --method and --calls are for frames; with --type the input is one message")
            }
            // The usage offers one or the other: which would say what a stream both name is?
            guard method == nil || callsFile == nil else {
                throw CLIError(.usage, "decode: give --calls or --method, not both")
            }
            guard callsFile == nil || file != nil else {
                throw CLIError(.usage, "decode: --calls CLIENT needs the server's side as FILE")
            }
            // Standard input holds one of them: the first read would leave nothing for the other.
            let standardInput: Set<String?> = ["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]
            guard !standardInput.contains(callsFile) || !standardInput.contains(file) else {
                throw CLIError(.usage, "decode: --calls and FILE cannot both be standard input (-)")
            }
            encoding = encodings.first ?? .raw
        }

        /// "; did you mean …?" with the messages this build knows by a name close to `name` (`HealthCheckResponse`,
        /// `Scalar`), as `tokenet describe` names them; empty when none is.
        static func messageMeant(by name: String) -> String {
            var close: [String] = []
            for message in ProtoRegistry.messages where CallCommand.isClose(message.protoName, name) {
                close.append(message.protoName)
            }
            close.sort()
            guard !close.isEmpty, close.count <= InspectSession.mostSuggestions else { return "" }
            return "; did you mean \(close.joined(separator: " or "))?"
        }

        /// The same for a method, written as `tokenet call` takes it (`Health/Chek`).
        static func methodMeant(by path: String) -> String {
            let wirePath: String
            do {
                wirePath = try CallCommand.methodPath(path)
            } catch {
                return ""
            }
            return CallTarget.knownSuggestion(for: wirePath)
        }

        /// A name as typed, quoted, cut short (it may be anything) and with a card number in it masked (`maskPAN`), as
        /// the other commands quote what was typed: a card number pasted as --type or --method must not be echoed to
        /// the terminal and whatever records it. Masked before it is cut, so that a cut cannot leave a card number's
        /// first digits whole.
        static func shown(_ text: String) -> String {
            let masked = maskPAN(text)
            return "'\(masked.count > 100 ? String(masked.prefix(100)) + "…" : masked)'"
        }

        static func method(_ path: String) -> AnyMethodDescriptor? {
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].isEmpty else { return nil }
            return ProtoRegistry.service(named: String(parts[1]))?.method(named: String(parts[2]))
        }
    }

    /// At most 64 MiB: a frame is at most 4 MiB by default, and a capture's stream rarely holds more than a few.
    static let inputLimit = 64 * 1024 * 1024

    /// Any frame the input can hold: a peer may announce a max_frame_size above the 4 MiB default in its hello and
    /// then be sent frames that long, which decode refused as too large. The input is in memory already, and a
    /// length past its end is reported as a frame cut short.
    static let frameLimit = inputLimit

    static func read(_ file: String?) throws(CLIError) -> [UInt8] {
        guard let file, file != "-" else {
            return try StandardInput.readAll(
                command: "decode", limit: inputLimit,
                overLimit: CLIError(.usage, "decode: standard input holds more than 64 MiB, the most decode reads"))
        }
        // A regular file that is too large is refused before reading; anything else (a pipe) as soon as it is.
        let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
        let overLimit = CLIError(.usage, "decode: \(file) holds more than 64 MiB")
        guard size <= inputLimit else { throw overLimit }
        return try StandardInput.readAll(file: file, command: "decode", limit: inputLimit, overLimit: overLimit)
    }

    /// Whether `bytes` read as `type` hold only fields the type has: the decoding drops any others.
    static func keepsEveryByte(_ bytes: [UInt8], as type: any ProtoMessage.Type) -> Bool {
        type.unknownFieldCount(in: bytes) == 0
    }

    static func message(_ bytes: [UInt8], as type: any ProtoMessage.Type) throws(CLIError) -> String {
        do {
            return try type.init(serializedBytes: bytes).jsonString(options: .pretty)
        } catch let error as WireError {
            // The wire layer's message says it all; its code (`invalidMessage: `) is for programs, not people.
            let message =
                error.code == .invalidMessage
                ? error.message : "the bytes are not a \(type.protoName): \(error.message)"
            throw CLIError(.data, "decode: \(message)")
        } catch {
            throw CLIError(.data, "decode: the bytes are not a \(type.protoName)", cause: DescribedError(error))
        }
    }

    /// The calls of the client's side of a connection (`--calls`), by stream id: their methods, and the paths of
    /// those this build does not know.
    struct ClientCalls {
        var known: [UInt32: AnyMethodDescriptor] = [:]
        var unknown: [UInt32: String] = [:]
    }

    /// The methods of the call_start frames in the client's side of a connection, by stream id.
    static func calls(in bytes: [UInt8], file: String) throws(CLIError) -> ClientCalls {
        try refuseTLSRecords(bytes, named: "--calls \(file)")
        var decoder = FrameDecoder(maximumFrameSize: frameLimit)
        decoder.feed(bytes)
        var calls = ClientCalls()
        do {
            while let frame = try decoder.nextFrame() {
                guard case .callStart(let start) = frame.kind else { continue }
                if let method = Options.method(start.method) {
                    calls.known[frame.streamID] = method
                } else {
                    calls.unknown[frame.streamID] = start.method
                }
            }
            try decoder.finish()
        } catch {
            throw CLIError(.data, "decode: --calls \(file) is not a stream of frames", cause: DescribedError(error))
        }
        return calls
    }

    /// Refuses bytes that open with a TLS record: a capture followed as TCP (`follow,tcp`) gives the encrypted
    /// records, which the frame decoder took for a plaintext peer talking to a TLS one and said so.
    static func refuseTLSRecords(_ bytes: [UInt8], named name: String) throws(CLIError) {
        guard bytes.count >= 3, (0x14...0x17).contains(bytes[0]), bytes[1] == 0x03, bytes[2] <= 0x04 else { return }
        throw CLIError(
            .data,
            "decode: \(name) starts with a TLS record: the bytes are still encrypted, and decode reads what TLS "
                + "carries; with the key log the nodes wrote (SSLKEYLOGFILE), tshark -r CAPTURE -o "
                + "tls.keylog_file:KEYLOG -q -z follow,tls,raw,N gives them (follow,tls, not follow,tcp)")
    }

    /// Prints each frame as it is decoded, so that what came before a broken frame is still shown.
    /// `answered` holds the calls of the other side (`--calls`), whose messages here are their responses.
    static func frames(_ bytes: [UInt8], answering answered: ClientCalls, method: AnyMethodDescriptor?)
        throws(CLIError)
    {
        try refuseTLSRecords(bytes, named: "the input")
        // Said before anything is printed: 60 MB of zeros printed 15 million lines of {} first, for over a minute.
        if !bytes.isEmpty, bytes.count % 4 == 0, !bytes.contains(where: { $0 != 0 }) {
            throw zeros(frames: bytes.count / 4)
        }
        var decoder = FrameDecoder(maximumFrameSize: frameLimit)
        decoder.feed(bytes)
        var calls = DecodedFrame.Calls(answered: answered.known, method: method, unknownMethods: answered.unknown)
        var count = 0
        var empty = 0
        do {
            while let frame = try decoder.nextFrame() {
                count += 1
                if frame == WireV1.Frame() { empty += 1 }
                printOut(
                    SecretFields.maskedJSON(try DecodedFrame.json(frame, calls: &calls), as: WireV1.Frame.self, .frame))
                // `| head -1`: the rest would be decoded for nobody (a 64 MiB input took minutes).
                if StandardStream.outputReaderLeft { return }
            }
            try decoder.finish()
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError(
                .data,
                "decode: frame \(count + 1) (after \(count) whole frame\(count == 1 ? "" : "s")) cannot be decoded",
                cause: DescribedError(error))
        }
        guard count > 0 else { throw CLIError(.data, "decode: the input holds no frame") }
        // Valid frames each (N = 0 is an empty Frame), but no connection sends nothing else: its first is a hello.
        guard empty < count else { throw zeros(frames: count) }
    }

    /// Input of `frames` empty frames (each a length prefix of 0) and nothing else.
    private static func zeros(frames count: Int) -> CLIError {
        CLIError(
            .data,
            "decode: the input holds \(count) frame\(count == 1 ? "" : "s") and \(count == 1 ? "it is" : "all are") "
                + "empty (a length of 0): bytes of zeros, not one side of a connection, which starts with its hello")
    }

    static let help = """
        Usage: tokenet decode [--hex | --base64] [--calls CLIENT | --method /package.Service/Method] [FILE]
               tokenet decode [--hex | --base64] --type MESSAGE [FILE]

        Decodes Tokenet bytes into JSON without a node, from the message types this build knows (Protos/). Reads
        FILE, or standard input when there is none (or it is -), at most 64 MiB.

        Without --type the bytes are frames as they travel inside TLS (Protos/README.md section 2: a 4-byte
        big-endian length, then a tokenet.wire.v1.Frame), such as one direction of a connection that Wireshark
        decrypted ("Follow TLS Stream", saved as raw). Each frame prints as one JSON object. The message in a
        message frame is decoded as its call's request type when the call's call_start came earlier in the input
        (the client's side of a connection). The server's side holds no call_start: --calls reads them from the
        client's side of the same connection, or --method names the one method whose responses its messages are.
        A message whose type is not known shows its length alone, its bytes withheld (which of its fields
        holds a security code cannot be told), and so do those of a stream that --method does not fit (another
        call's, such as the CLI's reflection lookups), with a note on standard error. A card number in any
        field shows masked to its last four digits, as in the nodes' logs, and a card's security code, a PIN,
        a credential's secret, an app activation code, an access token, a one-time or HOTP code and a push
        receipt (text fields cvc, pin, secret, activation_code, access_token, code, user_code, device_code,
        first_code, second_code and payload) show as "***", as does a text or bytes field whose content reads as
        a protobuf message (another type's fields). A message whose type only --method gives (no call_start
        confirms it) shows every text and bytes field as "***", since a message of another type may decode as
        one. A status detail of a type not known shows its length alone, and binary metadata shows as "***".

        With --type MESSAGE (a fully-qualified name, such as tokenet.tsp.v1.DigitizeRequest) the bytes are one
        serialized message of that type.

        Options:
          --hex        The input is hexadecimal (spaces, newlines and colons are ignored, as xxd -p and
                       Wireshark's "Copy as Hex" write it).
          --base64     The input is base64 (standard or URL-safe alphabet; spaces and newlines are ignored).
          --type MESSAGE
                       Decode one message of this type instead of frames.
          --calls CLIENT
                       The client's side of the connection (a file in the same encoding): FILE is the server's,
                       and its messages are decoded as the responses of the calls CLIENT started.
          --method /package.Service/Method
                       Decode the messages of calls whose call_start is not in the input as this method's
                       responses (written as tokenet call takes it: package.Service/Method also does).

        Exit status: 0 when everything was decoded; 1 when the bytes are not what they should be (what was
        decoded before is printed, and the message says where it stopped); 2 for bad options, input that is
        not hex or base64, hex or base64 text given without --hex or --base64, or tshark's follow output
        given whole (both sides of a connection).

        Examples:
          tokenet decode --type tokenet.health.v1.HealthCheckResponse --hex <<< 0801
          tokenet decode --hex client.hex
          tokenet decode --hex --calls client.hex server.hex
          tokenet decode --method /tokenet.tsp.v1.Provisioning/Digitize server.bin
        """
}
