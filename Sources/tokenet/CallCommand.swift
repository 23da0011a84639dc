import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet call ADDR pkg.Service/Method -d '{json}'`: calls any method with a JSON request and prints the
/// responses as JSON, learning the message types from the node's reflection service.
enum CallCommand {
    static let subcommand = Subcommand(
        name: "call",
        summary: "Call a method of a node with JSON requests and print the responses as JSON.",
        help: help,
        valuedOptions: InspectOptions.valuedFlags
    ) { arguments throws(CLIError) in
        let options = try InspectOptions(
            parsing: arguments, command: "call", operands: 1...1, named: ["METHOD"], takesData: true)
        let path = try methodPath(options.operands[0])
        if options.data == "@" { try refuseSharedStandardInput(options) }
        // `--deadline` bounds the whole command, reading `-d @` included (it counts from `options.started`).
        guard let text = try requestText(options.data, until: options.deadline.map { options.started + $0 }) else {
            let given = DurationText.describe(options.deadline ?? .zero)
            return InspectSession.report(
                RPCError(
                    .deadlineExceeded,
                    "the command's deadline of \(given) ran out while reading the request from standard input "
                        + "(it had not ended)"))
        }
        let requests = try JSONTexts.split(text)
        if options.transport == .plaintext { try refuseCardNumbersInTheClear(requests, metadata: options.metadata) }
        // The trace id after an error finds the call in the nodes' logs without running it again with -v.
        return try InspectSession.run(options, tracedFailures: true) { session in
            guard let target = try await CallTarget.resolve(path, session: session) else {
                return try await probe(path, session: session)
            }
            return try await call(target, requests: try encode(requests, as: target), session: session)
        }
    }

    static let help = """
        Usage: tokenet call ADDR METHOD [-d JSON | -d @] [OPTIONS]

        Calls METHOD (pkg.Service/Method, /pkg.Service/Method or pkg.Service.Method) on the node at ADDR
        (HOST:PORT). The request and response types come from the node's reflection service (or, for a node
        without one, from the types this build knows). Each response prints as indented proto3 JSON; a
        server-streaming method prints one object per message as they arrive, until the stream ends or nobody reads
        the output any more (| head -1 cancels the call, with exit status 0).

        Options:
          -d JSON              The request as proto3 JSON (default: {}, the empty request). For a client-streaming
                               or bidirectional method, several objects one after another, one per request.
          -d @                 Read the request JSON from standard input (at most 16 MiB); for a file,
                               -d @ < FILE.
          -v                   Also print, on stderr, the method and its types, the node and its identity, the
                               request metadata (with the trace id), then the trailers of the node's status, the
                               messages each way, the time taken and the status.
          --emit-defaults      Print every field of each response, those at their default value too (0, "",
                               false, an enum's first value, [] and null for an unset message); without it they
                               are left out, as proto3 JSON leaves them.
        \(InspectOptions.connectionHelp)

        Exit status: 0 when the call ends OK; 64 + the status code otherwise, printed as "ERROR: CODE: message" on
        stderr (76 for UNIMPLEMENTED, 68 for DEADLINE_EXCEEDED), with any details of the status under it, one "detail
        TYPE: JSON" line each, then "(trace ID)", the call's trace id in the nodes' logs (not for a call refused before
        it was sent); 1 when the node cannot be reached or a TLS file (--cacert, --cert, --key) cannot be
        used; 2 for bad options or request JSON that does not fit the request type. Ctrl-C (or SIGTERM) cancels the
        call on the node, closes the connection in order and ends the command by that signal; a second one ends it at
        once.

        Examples:
          export TOKENET_CACERT=pki/ca.pem TOKENET_CERT=pki/operator.pem TOKENET_KEY=pki/operator.key
          tokenet call 127.0.0.1:7001 tokenet.health.v1.Health/Check -d '{"service": ""}'
          tokenet call 127.0.0.1:7001 tokenet.health.v1.Health/Watch -d '{}' --deadline 5s
          echo '{}' | tokenet call 127.0.0.1:7001 tokenet.health.v1.Health/Check -d @ -H 'x-request-id: 42'
        """

    /// `pkg.Service/Method`, `/pkg.Service/Method` or `pkg.Service.Method` as the wire path `/pkg.Service/Method`;
    /// a leading dot, as descriptors write full names (`.pkg.Service/Method`), is dropped.
    static func methodPath(_ text: String) throws(CLIError) -> String {
        // A call_start holds the method beside the -H metadata (`InspectOptions.headerLimit` leaves 4 KiB for the
        // rest): a longer name was sent, and failed as the client's own RESOURCE_EXHAUSTED (exit 72).
        guard text.utf8.count <= methodLimit else {
            throw CLIError(
                .usage,
                "call: the method name is \(text.utf8.count) bytes long; a method name takes at most \(methodLimit)")
        }
        let name = Substring(InspectSession.withoutLeadingDot(text.hasPrefix("/") ? String(text.dropFirst()) : text))
        let separator = name.lastIndex(of: "/") ?? name.lastIndex(of: ".")
        guard let separator, separator != name.startIndex, name.index(after: separator) != name.endIndex,
            !name[name.index(after: separator)...].contains("/"), !name.contains(where: \.isWhitespace)
        else {
            throw CLIError(.usage, "call: '\(maskPAN(text))' is not a method; write it as pkg.Service/Method")
        }
        // Services are named in UpperCamelCase and packages in lower case: a service name alone (tokenet.health.v1.
        // Health) would otherwise split into package "tokenet.health.v1" and method "Health". A slash says where
        // the method starts, whatever the service's case: the node answers for a name it does not serve.
        guard name[separator] == "/" || name[..<separator].split(separator: ".").last?.first?.isUppercase == true
        else {
            // A method of a service whose name was typed in lower case reads as a service too: the slash form says
            // which is which, and reaches the node, which suggests the name it serves.
            let method = name[name.index(after: separator)...]
            let slashForm =
                method.first?.isUppercase == true && name[..<separator].contains(".")
                ? "; if \(method) is the method, write \(name[..<separator])/\(method)" : ""
            throw CLIError(
                .usage,
                maskPAN(
                    "call: '\(text)' names no method (a service?); the method must be package.Service/Method, "
                        + "such as tokenet.health.v1.Health/Check\(slashForm)"))
        }
        return "/\(name[..<separator])/\(name[name.index(after: separator)...])"
    }

    /// The longest method name (pkg.Service/Method) the CLI sends, in bytes.
    static let methodLimit = 2048

    /// The most `-d @` reads from standard input: sixteen times the largest message a Tokenet node accepts (its
    /// flow-control window, 1 MiB), room for JSON's longer spelling of a request (base64, escapes, indentation) and
    /// for several requests of a client-streaming call. Input past it could not be sent anyway, and is refused
    /// before it is read whole rather than after it filled memory.
    static let standardInputLimit = 16 * ConnectionSettings.defaults.initialStreamWindow

    /// Refuses `-d @` with a TLS file that is standard input too (`--key /dev/stdin`): each read took what it could
    /// of the other's bytes, and the error named whichever failed ("the request JSON is not valid", or the key
    /// file "is empty") rather than the two options that cannot share one input. Compared by device and inode, so
    /// /dev/fd/0 and /proc/self/fd/0 are caught as well.
    static func refuseSharedStandardInput(_ options: InspectOptions) throws(CLIError) {
        guard case .mutualTLS(let files) = options.transport else { return }
        var input = stat()
        guard fstat(0, &input) == 0 else { return }
        for (flag, variable, path, _) in InspectSession.tlsFiles(files) {
            var file = stat()
            guard stat(path, &file) == 0, file.st_dev == input.st_dev, file.st_ino == input.st_ino else { continue }
            throw CLIError(
                .usage,
                "call: -d @ and \(flag) \(path) (given by \(flag) or \(variable)) both read standard input; give one "
                    + "of them as a file (-d '{…}' inline, or \(flag) from a file or <(…))")
        }
    }

    /// The text of `-d`: inline JSON, standard input for `@`, or the empty request; nil when `deadline` passed
    /// before standard input ended.
    static func requestText(_ data: String?, until deadline: ContinuousClock.Instant? = nil) throws(CLIError)
        -> String?
    {
        guard let data else { return "{}" }
        // No JSON text starts with `@`: `-d @request.json` is curl's way of naming a file, which -d does not take.
        // Parsed as JSON it failed on "unexpected character '@' at byte 0", which said nothing of the file.
        if data.hasPrefix("@"), data != "@" {
            let file = data.dropFirst()
            // curl's `@-` is standard input, which `@` alone is here; a name that is blank has no file to send.
            if file == "-" || file.allSatisfy(\.isWhitespace) {
                throw CLIError(
                    .usage,
                    "call: -d takes request JSON, or @ alone for standard input; write -d @ (not '\(maskPAN(data))')")
            }
            throw CLIError(
                .usage,
                "call: -d takes request JSON, or @ alone for standard input, not a file name; to send \(file), "
                    + "write -d @ < \(file)")
        }
        guard data == "@" else { return data }
        guard
            let bytes = try StandardInput.readAll(
                command: "call", limit: standardInputLimit, until: deadline,
                overLimit: CLIError(
                    .usage,
                    "call: standard input holds more than \(mebibytes(standardInputLimit)) of request JSON, the most -d @ "
                        + "reads; one request may take at most \(mebibytes(ConnectionSettings.defaults.initialStreamWindow)) "
                        + "once encoded (the largest message a node accepts)"))
        else { return nil }
        // A leading byte order mark is skipped, as the nodes skip it in their config files (RFC 8259 lets a reader
        // ignore it): an editor may save a request file with one, and the file must not be refused for a character
        // the editor does not show.
        let text = bytes.starts(with: byteOrderMark) ? bytes.dropFirst(byteOrderMark.count) : bytes[...]
        guard let text = String(validating: text, as: UTF8.self) else {
            throw CLIError(.usage, "call: standard input is not UTF-8 text")
        }
        return text
    }

    /// U+FEFF in UTF-8.
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    private static func mebibytes(_ bytes: Int) -> String { "\(bytes / (1024 * 1024)) MiB" }

    /// Parses each JSON text as the request type; a text that does not fit is a usage error naming the field. The
    /// message quotes what was typed (an enum name, a field name, a number) with anything shaped like a card
    /// number masked to its last four digits: a card number put in the wrong field must not be echoed to the
    /// terminal and whatever records it. A client-streaming or bidirectional method takes any number of requests,
    /// none included; the others exactly one.
    /// `source` names where the texts came from in the refusal of too many (a scenario's line has no -d).
    static func encode(
        _ texts: [String], as target: CallTarget, from source: String = "-d"
    ) throws(CLIError) -> [Data] {
        if !target.kind.clientStreams && texts.isEmpty {
            throw CLIError(.usage, "call: the request JSON is empty; \(target.path) takes one request message")
        }
        if !target.kind.clientStreams && texts.count != 1 {
            throw CLIError(
                .usage, "call: \(target.path) takes exactly one request message; \(source) holds \(texts.count)")
        }
        var requests: [Data] = []
        for (index, text) in texts.enumerated() {
            let position = texts.count > 1 ? " \(index + 1)" : ""
            do {
                let request = try target.request.init(jsonString: text).serializedData()
                try refuseOversized(request, position: position, from: source)
                requests.append(request)
            } catch let error as CLIError {
                throw error
            } catch let error as WireError {
                throw CLIError(
                    .usage,
                    "call: request\(position) is not a valid \(target.request.protoName): \(maskPAN(error.message))")
            } catch {
                throw CLIError(.usage, "call: request\(position) cannot be encoded: \(maskPAN("\(error)"))")
            }
        }
        return requests
    }

    /// Over `--plaintext`, a request (or a metadata value) that holds a card number is refused before anything is
    /// sent: it would cross the network unencrypted, and every method that takes a card number answers only a client
    /// certificate.
    static func refuseCardNumbersInTheClear(_ texts: [String], metadata: Metadata) throws(CLIError) {
        let advice = "and --plaintext would send it unencrypted; drop --plaintext to call over mutual TLS"
        for (index, text) in texts.enumerated() where holdsCardNumber(json: text) {
            let position = texts.count > 1 ? " \(index + 1)" : ""
            throw CLIError(.usage, "call: request\(position) holds a card number, \(advice)")
        }
        for (key, value) in metadata.entries {
            let text: String
            switch value {
            case .text(let value): text = value
            case .binary(let bytes): text = String(decoding: bytes, as: UTF8.self)
            }
            guard !holdsCardNumber(text) else {
                throw CLIError(.usage, "call: the metadata \(key) holds a card number, \(advice)")
            }
        }
    }

    /// Whether the JSON `text` holds a card number in a string, a number or a member's name, each read as the node
    /// would read it (`\u0034` is a 4); text that is not JSON is looked at as it is.
    static func holdsCardNumber(json text: String) -> Bool {
        guard let value = try? JSONValue(parsing: text) else { return holdsCardNumber(text) }
        return holdsCardNumber(in: value)
    }

    private static func holdsCardNumber(in value: JSONValue) -> Bool {
        switch value {
        case .string(let text), .number(let text): holdsCardNumber(text)
        case .array(let items): items.contains(where: holdsCardNumber(in:))
        case .object(let members): members.contains { holdsCardNumber($0.key) || holdsCardNumber(in: $0.value) }
        case .null, .bool: false
        }
    }

    /// Whether `text` holds a card number of a scheme the TSP takes: 13 to 19 digits with a correct check digit,
    /// written together or in groups split by single spaces or hyphens, as a person types one. Stricter than the
    /// logs' masking (`maskPAN`), which hides any long run of digits: a request that holds a large number (a
    /// uint64, a time in milliseconds) is no card data, and goes.
    static func holdsCardNumber(_ text: String) -> Bool {
        var digits = ""
        var afterSeparator = false
        func isCardNumber() -> Bool { (try? PAN(digits))?.scheme.isEligible ?? false }
        for scalar in text.unicodeScalars {
            if ("0"..."9").contains(scalar) {
                digits.unicodeScalars.append(scalar)
                afterSeparator = false
            } else if scalar == " " || scalar == "-", !digits.isEmpty, !afterSeparator {
                afterSeparator = true
            } else {
                if isCardNumber() { return true }
                digits = ""
                afterSeparator = false
            }
        }
        return isCardNumber()
    }

    /// Refuses an encoded request larger than a Tokenet node takes (the smaller of its frame size, less room for the
    /// frame's fields, and its flow-control window): the runtime refused it only once connected, as the call's own
    /// RESOURCE_EXHAUSTED (status 72), for what is the command line's mistake.
    static func refuseOversized(_ request: Data, position: String, from source: String) throws(CLIError) {
        // Nodes announce the runtime's defaults.
        let limit = ConnectionSettings.defaults.largestMessage
        guard request.count > limit else { return }
        throw CLIError(
            .usage,
            "call: request\(position) (\(source)) encodes to \(request.count) bytes; a Tokenet node takes messages "
                + "of at most \(limit) bytes")
    }

    /// Makes the call and prints each response as it arrives; with `-v`, what it sent and how it ended too.
    static func call(_ target: CallTarget, requests: [Data], session: InspectSession) async throws -> Int32 {
        let trace = session.options.verbose ? CallTrace(target, requests: requests.count, session: session) : nil
        do {
            try await call(target, requests: requests, session: session, trace: trace)
        } catch {
            trace?.ended(by: error)
            throw error
        }
        trace?.endedOK()
        return 0
    }

    private static func call(
        _ target: CallTarget, requests: [Data], session: InspectSession, trace: CallTrace?
    ) async throws {
        let client = session.client
        var options = session.callOptions
        if let trace { options.onTrailers = { trace.receivedTrailers($0) } }
        switch target.kind {
        case .unary:
            let response = try await client.unary(path: target.path, request: requests[0], options: options)
            trace?.received()
            try printResponse(response, target, session.options)
        case .clientStreaming:
            let response = try await client.clientStreaming(path: target.path, requests: requests, options: options)
            trace?.received()
            try printResponse(response, target, session.options)
        case .serverStreaming:
            try await printStream(
                try await client.serverStreaming(path: target.path, request: requests[0], options: options), target,
                session.options, trace: trace)
        case .bidirectionalStreaming:
            try await printStream(
                try await client.bidirectional(path: target.path, requests: requests, options: options), target,
                session.options, trace: trace)
        }
    }

    /// Prints each response of a stream as it arrives, until the stream ends or nobody reads standard output any
    /// more (`tokenet call … Watch | head -1`): then the call is cancelled and the command ends with status 0, as for
    /// any reader that stops early, rather than holding a stream that may never end for output nobody reads. A
    /// response that cannot be written (a full disk, a closed stdout) ends the stream too, and the command then
    /// fails saying so (`statusAfterOutput`), instead of running on while every response is lost.
    static func printStream(
        _ responses: RawResponseStream, _ target: CallTarget, _ options: InspectOptions, trace: CallTrace?
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await response in responses {
                    trace?.received()
                    try printResponse(response, target, options)
                    if StandardStream.outputWriteError != nil { return }
                }
            }
            group.addTask {
                await StandardOutputReader.departure()
                // The wait also ends when the command is interrupted (Ctrl-C cancels it): that is no reader leaving.
                if !Task.isCancelled { trace?.readerLeft() }
            }
            // The first to finish decides: the stream's end (or its error, thrown from here), or the reader leaving.
            try await group.next()
            group.cancelAll()
            // An interrupted command ends as its call did: CANCELLED, not OK (`-v` said "nobody reads its output").
            if Task.isCancelled { throw RPCError(.cancelled, "the command was interrupted") }
        }
    }

    static func printResponse(_ data: Data, _ target: CallTarget, _ options: InspectOptions) throws {
        let response: any ProtoMessage
        do {
            response = try target.response.init(serializedBytes: data)
        } catch let error as WireError {
            throw RPCError(.internal, "the response is not a valid \(target.response.protoName): \(error.message)")
        }
        printOut(try response.jsonString(options: JSONEncodingOptions(indent: 2, emitDefaults: options.emitDefaults)))
    }

    /// For a method the node's reflection does not list: opens the call without sending a request, so the node's own
    /// answer (UNIMPLEMENTED for a method it does not serve) is what the command reports, and nothing runs with a
    /// request of a guessed type.
    static func probe(_ path: String, session: InspectSession) async throws -> Int32 {
        do {
            _ = try await session.client.clientStreaming(path: path, requests: [], options: session.callOptions)
        } catch let error as RPCError where error.code == .unimplemented {
            // A node of another kind says so first (`InspectSession.wrongNode`); a close name comes after.
            if let wrongNode = await session.wrongNode(calling: path) { throw wrongNode }
            throw await suggestion(for: path, after: error, session: session) ?? error
        }
        throw CLIError(
            .connection,
            "\(session.options.address) answered \(maskPAN(path)), but its reflection service does not describe it")
    }
}
