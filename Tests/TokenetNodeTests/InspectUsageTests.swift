import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

/// Runs `tokenet list`, `describe` and `call` with input they must refuse before reaching any node: each ends with
/// exit status 2 and a message that says what to change.
@Suite struct InspectUsageTests {
    /// A node address nothing listens on; none of these commands may get as far as connecting.
    let address = "127.0.0.1:1"

    /// `--help` or `-h` as the value of an option (the request of `-d`, the metadata of `-H`) is that value, not a
    /// call for help: the command goes on (here to connecting, or refusing the header). Where a flag may stand,
    /// also after an option with its value, it still shows the help.
    @Test func helpAsAnOptionsValueIsThatValue() async throws {
        let method = "tokenet.health.v1.Health/Check"
        let data = try await runTokenet(["call", address, method, "-d", "--help", "--plaintext"])
        #expect(data.status == 1 && data.stdout.isEmpty, "\(data.stdout)\(data.stderr)")
        #expect(data.stderr.contains("cannot connect to \(address)"), "\(data.stderr)")
        let header = try await runTokenet(["call", address, method, "-H", "-h", "--plaintext"])
        #expect(header.status == 2 && header.stdout.isEmpty, "\(header.stdout)\(header.stderr)")
        let listing = try await runTokenet(["wallet", "cards", address, "--cacert", "--help", "--plaintext"])
        #expect(listing.status != 0 && listing.stdout.isEmpty, "\(listing.stdout)\(listing.stderr)")
        let help = try await runTokenet(["call", address, method, "--deadline", "5s", "--help"])
        #expect(help.status == 0 && help.stdout.hasPrefix("Usage: tokenet call"), "\(help.stdout)\(help.stderr)")
    }

    /// A directory as standard input makes read(2) fail; the command reports why instead of trapping.
    @Test func unreadableStandardInputIsAUsageError() async throws {
        let directory = open("/", O_RDONLY | O_DIRECTORY)
        try #require(directory >= 0)
        let result = try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Check", "-d", "@", "--plaintext"],
            standardInput: FileHandle(fileDescriptor: directory, closeOnDealloc: true))
        #expect(result.reason == .exit)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("cannot read standard input: Is a directory"), "\(result.stderr)")
    }

    /// Standard input past the 16 MiB `-d @` reads is refused as soon as the limit is passed, before connecting: the
    /// command used to read all of it (and hold several copies) whatever its size, then fail to connect here.
    @Test func standardInputOverTheLimitIsRefusedBeforeConnecting() async throws {
        let result = try await callWithServiceNameOnStandardInput(length: 16 * 1024 * 1024)
        #expect(result.reason == .exit)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("call: standard input holds more than 16 MiB of request JSON, the most -d @ reads"),
            "\(result.stderr)")
        #expect(result.stderr.contains("one request may take at most 1 MiB once encoded"), "\(result.stderr)")
    }

    /// Input just under the limit is read whole and gets as far as connecting (nothing listens on `address`).
    @Test func standardInputUnderTheLimitIsRead() async throws {
        let result = try await callWithServiceNameOnStandardInput(length: 1024 * 1024)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("cannot connect to \(address)"), "\(result.stderr)")
    }

    /// `tokenet call … -d @` with `{"service": "aaa…"}` on standard input, the name `length` bytes long.
    private func callWithServiceNameOnStandardInput(length: Int) async throws -> ProcessResult {
        let directory = try TemporaryDirectory()
        let path = directory.path("request.json")
        var json = Data(#"{"service": ""#.utf8)
        json.append(Data(repeating: UInt8(ascii: "a"), count: length))
        json.append(Data(#""}"#.utf8))
        try json.write(to: URL(fileURLWithPath: path))
        return try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Check", "-d", "@", "--plaintext"],
            standardInput: try FileHandle(forReadingFrom: URL(fileURLWithPath: path)))
    }

    /// Runs `tokenet` expecting the usage error `message`.
    private func expectUsageError(
        _ arguments: [String], _ message: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let result = try await runTokenet(arguments)
        #expect(result.status == 2, "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test func aMissingOperandIsNamed() async throws {
        try await expectUsageError(["call", address, "--plaintext"], "call: missing METHOD after the address")
        try await expectUsageError(["describe", address, "--plaintext"], "describe: missing SYMBOL after the address")
    }

    @Test func onlyTheExtraOperandsAreNamed() async throws {
        try await expectUsageError(
            ["describe", address, "a", "b", "--plaintext"], "describe: unexpected arguments: b\n")
    }

    /// Metadata past what a call_start holds were sent and refused by the node (RESOURCE_EXHAUSTED, status 72, in
    /// the wire's words); they are the command line's mistake, named with -H before anything is sent.
    @Test func metadataTooLargeForACallAreRefused() async throws {
        let value = String(repeating: "a", count: 100_000)
        try await expectUsageError(
            ["call", address, "tokenet.health.v1.Health/Check", "-H", "x-big: \(value)", "--plaintext"],
            "call: -H: the metadata add up to 100015 bytes; a call takes at most 61440 (its method, metadata and "
                + "deadline share 65536 bytes)")
    }

    /// Counted as they are encoded: 5,000 short entries hold 40 KB of keys and values but encode to 69 KB, and
    /// went to the node, which refused the call_start (RESOURCE_EXHAUSTED, status 72).
    @Test func manyShortEntriesAreCountedAsEncoded() async throws {
        let headers = (0..<5000).flatMap { ["-H", "x-k\($0): v"] }
        try await expectUsageError(
            ["call", address, "tokenet.health.v1.Health/Check", "--plaintext"] + headers,
            "call: -H: the metadata add up to 68890 bytes; a call takes at most 61440")
    }

    @Test func anEmptyOperandIsRefused() async throws {
        try await expectUsageError(["list", address, "", "--plaintext"], "list: SERVICE is empty")
    }

    /// An address the transport cannot use is a usage error (status 2), not a failed connection (status 1).
    @Test func anAddressOtherThanAnIPAddressOrAHostNameIsRefused() async throws {
        for address in ["[::g]:7001", "tsp!node:7001", "999.0.0.1:7001"] {
            try await expectUsageError(
                ["list", address, "--plaintext"],
                "list: '\(address)' is not an IP address or host name with a port, such as 127.0.0.1:7001, "
                    + "[::1]:7001 or tsp.internal:7001")
        }
        try await expectUsageError(
            ["list", "::1:7001", "--plaintext"],
            "list: '::1:7001' is not an address of the form HOST:PORT (an IPv6 address goes in brackets: [::1]:7001)")
    }

    /// `--plaintext` is a switch; a value given to it is refused rather than ignored, which turned plaintext on for
    /// `--plaintext=false` (and against a TLS node failed as if the node had hung up).
    @Test func plaintextTakesNoValue() async throws {
        for value in ["false", "true", ""] {
            try await expectUsageError(
                ["call", address, "tokenet.health.v1.Health/Check", "--plaintext=\(value)"],
                "call: --plaintext takes no value")
        }
        try await expectUsageError(
            ["wallet", "cards", address, "--plaintext=false"], "wallet cards: --plaintext takes no value")
    }

    /// A short switch given a value is refused as taking none: `-v=1` was "unknown option '-v=1'".
    @Test func aShortSwitchTakesNoValue() async throws {
        try await expectUsageError(
            ["call", address, "tokenet.health.v1.Health/Check", "-v=1"], "call: -v takes no value")
    }

    /// A method of a service typed in lower case, in the dot form, reads as a service: the refusal gives the slash
    /// form, which reaches the node and its suggestion.
    @Test func aMethodOfALowerCaseServiceIsToldTheSlashForm() async throws {
        try await expectUsageError(
            ["call", address, "tokenet.health.v1.health.Check", "--plaintext"],
            "names no method (a service?); the method must be package.Service/Method, such as "
                + "tokenet.health.v1.Health/Check; if Check is the method, write tokenet.health.v1.health/Check")
        try await expectUsageError(
            ["call", address, "tokenet.health.v1.Health", "--plaintext"],
            "names no method (a service?); the method must be package.Service/Method, such as "
                + "tokenet.health.v1.Health/Check; if Health is the method, write tokenet.health.v1/Health")
    }

    /// `--help=1` was "unknown option '--help'", as if the command had no help.
    @Test func helpTakesNoValue() async throws {
        try await expectUsageError(["wallet", "cards", address, "--help=1"], "wallet cards: --help takes no value")
        try await expectUsageError(["list", address, "--help="], "list: --help takes no value")
    }

    /// A certificate option given with `--plaintext` is refused, as grpcurl refuses it: the file was ignored without a
    /// word, so a command meant for a TLS node ran without TLS, and one naming the wrong file seemed to work.
    @Test func aCertificateOptionWithPlaintextIsRefused() async throws {
        for flag in ["--cacert", "--cert", "--key"] {
            try await expectUsageError(
                ["call", address, "tokenet.health.v1.Health/Check", flag, "pki/x.pem", "--plaintext"],
                "call: --plaintext connects without TLS, so \(flag) pki/x.pem would not be used; drop --plaintext to "
                    + "connect over mutual TLS, or drop \(flag)")
        }
        try await expectUsageError(
            ["wallet", "cards", address, "--plaintext", "--cacert=ca.pem", "--key", "k.pem"],
            "wallet cards: --plaintext connects without TLS, so --cacert ca.pem, --key k.pem would not be used")
    }

    /// The environment's certificate files are another matter: exported for the whole shell, they stay unused by a
    /// command that asks for `--plaintext`.
    @Test func certificateFilesFromTheEnvironmentGoUnusedWithPlaintext() async throws {
        let result = try await runTokenet(
            ["list", address, "--plaintext"],
            environment: ["TOKENET_CACERT": "ca.pem", "TOKENET_CERT": "operator.pem", "TOKENET_KEY": "operator.key"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("cannot connect to \(address): nothing accepts connections there"))
    }

    @Test func portZeroIsRefused() async throws {
        try await expectUsageError(["list", "127.0.0.1:0", "--plaintext"], "has port 0")
    }

    /// A port past 65535 is named as the mistake, rather than the address said not to be HOST:PORT at all.
    @Test func aPortPastTheLastIsNamed() async throws {
        try await expectUsageError(
            ["list", "127.0.0.1:99999", "--plaintext"],
            "list: '127.0.0.1:99999' has port 99999, past the last port (65535); give the port the node listens on")
    }

    @Test func aServiceNameIsNotAMethod() async throws {
        try await expectUsageError(
            ["call", address, "tokenet.health.v1.Health", "--plaintext"], "the method must be package.Service/Method")
    }

    /// `-d @FILE` (curl's way to send a file) says how to send the file, rather than failing on the `@` as JSON.
    @Test func aFileNamedAfterTheAtSignIsPointedToStandardInput() async throws {
        try await expectUsageError(
            ["call", address, "tokenet.health.v1.Health/Check", "-d", "@request.json", "--plaintext"],
            "call: -d takes request JSON, or @ alone for standard input, not a file name; to send request.json, "
                + "write -d @ < request.json")
    }

    /// curl's `@-` (standard input), or `@` and a blank, is pointed at `-d @` alone: the advice for a file named
    /// `-` or ` ` (`write -d @ < -`) would have read a file of that name.
    @Test func standardInputSpelledAsCurlDoesIsPointedAtTheAtSign() async throws {
        for data in ["@-", "@ "] {
            try await expectUsageError(
                ["call", address, "tokenet.health.v1.Health/Check", "-d", data, "--plaintext"],
                "call: -d takes request JSON, or @ alone for standard input; write -d @ (not '\(data)')")
        }
    }

    /// Characters after the request object are pointed at, not counted as a second request.
    @Test func trailingCharactersAfterTheRequestArePointedAt() async throws {
        for (data, message) in [
            ("{}x", "trailing characters at byte 2: 'x'"), ("{} ]", "trailing characters at byte 3: ']'"),
            ("{}{", "trailing characters at byte 2: an object that is never closed"),
        ] {
            try await expectUsageError(
                ["call", address, "tokenet.health.v1.Health/Check", "-d", data, "--plaintext"], message)
        }
    }

    /// A request that is not JSON itself, followed by more text, is reported for its own error, at its own place.
    @Test func anInvalidRequestBeforeTrailingCharactersIsReportedFirst() async throws {
        for data in ["{bad} x", "abc def"] {
            let result = try await runTokenet([
                "call", address, "tokenet.health.v1.Health/Check", "-d", data, "--plaintext",
            ])
            #expect(result.status == 2, "\(data): \(result.stderr)")
            #expect(
                result.stderr.hasPrefix("tokenet: call: the request JSON is not valid: "), "\(data): \(result.stderr)")
            #expect(!result.stderr.contains("trailing characters"), "\(data): \(result.stderr)")
        }
    }

    /// A text value with a control character in it (a line break from `$'a\nb'`) and a header with nothing before
    /// its first colon (an HTTP/2 pseudo-header) are refused naming what is wrong, before anything is sent.
    @Test func headersWithAControlCharacterOrNoKeyAreRefused() async throws {
        let call = ["call", address, "tokenet.health.v1.Health/Check", "--plaintext"]
        try await expectUsageError(
            call + ["-H", "x-val: a\nb"],
            "call: -H: the value of 'x-val' holds a control character or line separator (U+000A); text values are "
                + "printable text, and bytes go in a key ending in -bin, as base64")
        try await expectUsageError(
            call + ["-H", "x-val: a\u{7F}b"], "holds a control character or line separator (U+007F)")
        try await expectUsageError(
            call + ["-H", ":authority: evil"], "call: -H: ':authority: evil' has no key before its first ':'")
    }

    /// What follows the request is quoted with a card number in it masked to its last four digits.
    @Test func trailingCharactersDoNotEchoACardNumber() async throws {
        let arguments = ["call", address, "tokenet.health.v1.Health/Check", "-d", "{} 4761000010000009", "--plaintext"]
        try await expectUsageError(arguments, "trailing characters at byte 3: '************0009'")
        #expect(!(try await runTokenet(arguments).stderr.contains("4761000010000009")))
    }

    /// Keys starting with `tokenet-` belong to the runtime, and the one `-H` may set, the trace id, has a form: both
    /// are checked before connecting (status 2, as for any bad option), where the node's refusal came back as
    /// INVALID_ARGUMENT of the reflection lookup, with status 67.
    @Test(arguments: [
        (
            "tokenet-foo: 1",
            "call: -H: 'tokenet-foo' uses the prefix tokenet-, which is reserved for the runtime's own keys; "
                + "the one -H may set is tokenet-trace-id"
        ),
        (
            "Tokenet-Trace-Id: bad",
            "call: -H: tokenet-trace-id must be 8 to 32 lowercase hex digits with at least one of "
                + "a-f, such as 4bf92f3577b34da6; got 'bad'"
        ),
        ("tokenet-trace-id: ABCDEF12", "got 'ABCDEF12'"),
        ("tokenet-trace-id: 4761000010000009", "got '************0009'"),
        ("tokenet-trace-id-bin: AQID", "'tokenet-trace-id-bin' uses the prefix tokenet-"),
    ])
    func aReservedOrMalformedRuntimeKeyIsRefused(header: String, message: String) async throws {
        try await expectUsageError(
            ["call", address, "tokenet.health.v1.Health/Check", "-H", header, "--plaintext"], message)
    }

    /// A call has one trace id: two different ones are refused (the node took the first and dropped the other
    /// unsaid); the same one twice is that one.
    @Test func twoTraceIDsAreRefusedAndTheSameOneTwiceIsOne() async throws {
        try await expectUsageError(
            [
                "call", address, "tokenet.health.v1.Health/Check", "-H", "tokenet-trace-id: aaaabbbbcccc1111", "-H",
                "tokenet-trace-id: aaaabbbbcccc2222", "--plaintext",
            ],
            "call: -H: tokenet-trace-id is given twice ('aaaabbbbcccc1111' and 'aaaabbbbcccc2222'); a call has one "
                + "trace id")
        let same = try await runTokenet(
            [
                "list", address, "-H", "tokenet-trace-id: 4bf92f3577b34da6", "-H", "tokenet-trace-id: 4bf92f3577b34da6",
                "--plaintext",
            ])
        #expect(same.status == 1 && same.stderr.contains("cannot connect to \(address)"), "\(same.stderr)")
    }

    @Test func aWellFormedTraceIDIsSent() async throws {
        let result = try await runTokenet(
            ["list", address, "-H", "tokenet-trace-id: 4bf92f3577b34da6", "--plaintext"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("cannot connect to \(address)"), "\(result.stderr)")
    }

    /// `-d=JSON` and `-H=KEY: VALUE`, as grpcurl's flags take them, give the value after the `=`: they were refused
    /// as unknown options, though `-d` and `-H` are the command's own.
    @Test func aShortOptionTakesAValueAfterAnEqualsSign() async throws {
        let method = "tokenet.health.v1.Health/Check"
        try await expectUsageError(
            ["call", address, method, "-d={} x", "--plaintext"],
            "call: the request JSON has trailing characters at byte 3")
        try await expectUsageError(["call", address, method, "-H=x-bin: @@@", "--plaintext"], "'x-bin' ends in -bin")
        try await expectUsageError(
            ["call", address, method, "-d={}", "-d", "{}", "--plaintext"], "call: -d may be given once")
        let result = try await runTokenet(["call", address, method, "-d=--help", "-H=a: =b", "--plaintext"])
        #expect(result.status == 1 && result.stdout.isEmpty, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("cannot connect to \(address)"), "\(result.stderr)")
    }

    /// grpcurl's flags start with one dash (`-plaintext`, `-cacert`), and its users type them so: the refusal names
    /// the option meant.
    @Test(arguments: [
        ("-plaintext", "call: unknown option '-plaintext'; did you mean --plaintext?"),
        ("-cacert", "call: unknown option '-cacert'; did you mean --cacert?"),
        ("-deadline=5s", "call: unknown option '-deadline'; did you mean --deadline?"),
        ("-max-time", "call: unknown option '-max-time'; did you mean --deadline (such as 5s)?"),
        ("-rpc-header", "call: unknown option '-rpc-header'; did you mean -H?"),
        ("--verbos", "call: unknown option '--verbos'\n"),
    ])
    func aGrpcurlStyleOptionNamesTheOneMeant(option: String, message: String) async throws {
        try await expectUsageError(
            ["call", "127.0.0.1:1", "tokenet.health.v1.Health/Check", option, "--plaintext"], message)
    }

    /// Every command's own options are named the same way when typed with one dash: only the connection options
    /// were, and `wallet suspend … -reason X` said no more than "unknown option '-reason'".
    @Test(arguments: [
        (
            ["wallet", "suspend", "127.0.0.1:1", "card-1", "-reason", "x"],
            "unknown option '-reason'; did you mean --reason?"
        ),
        (["decode", "-hex"], "decode: unknown option '-hex'; did you mean --hex?"),
        (["scenario", "-check", "x.scenario"], "scenario: unknown option '-check'; did you mean --check?"),
        (["proxy", "-to", "127.0.0.1:1"], "proxy: unknown option '-to'; did you mean --to?"),
        (["up", "-dir", "x"], "up: unknown option '-dir'; did you mean --dir?"),
        (["demo", "-keep-dir"], "demo: unknown option '-keep-dir'; did you mean --keep-dir?"),
    ])
    func aSingleDashOptionOfAnyCommandNamesTheOneMeant(arguments: [String], message: String) async throws {
        try await expectUsageError(arguments, message)
    }

    /// Whatever argument a usage error quotes is quoted with a card number in it masked to its last four digits, as
    /// the request JSON is: a card number typed where the method, the address or an option's value goes was echoed
    /// to the terminal, and to whatever records it, as typed.
    @Test(arguments: [
        (["call", "127.0.0.1:1", "4761000010000009", "--plaintext"], "call: '************0009' is not a method"),
        (["call", "4761000010000009", "x.Y/Z", "--plaintext"], "call: '************0009' is not an address"),
        (
            ["call", "127.0.0.1:1", "x.Y/Z", "4761 0000 1000 0009", "--plaintext"],
            "unexpected arguments: **** **** **** 0009"
        ),
        (["call", "127.0.0.1:1", "x.Y/Z", "-H", "4761000010000009", "--plaintext"], "got '************0009'"),
        (
            ["call", "127.0.0.1:1", "x.Y/Z", "--deadline", "4761000010000009s", "--plaintext"],
            "--deadline: '************0009s'"
        ),
        (["list", "127.0.0.1:1", "--4761000010000009", "--plaintext"], "unknown option '--************0009'"),
        (
            ["describe", "127.0.0.1:1", "x", "4761-0000-1000-0009", "--plaintext"],
            "unexpected arguments: ****-****-****-0009"
        ),
        (["decode", "--type", "4761 0000 1000 0009"], "no message '**** **** **** 0009'"),
        (["decode", "--method", "x.Y/4761000010000009"], "no method 'x.Y/************0009'"),
        (["decode", "--4761000010000009"], "unknown option '--************0009'"),
        (["4761000010000009"], "unknown command '************0009'"),
        (["help", "4761-0000-1000-0009"], "unknown command '****-****-****-0009'"),
        (["version", "4761000010000009"], "unexpected argument '************0009'"),
        (
            ["call", "127.0.0.1:1", "x.Y/Z", "-H", "4761000010000009-bin: x", "--plaintext"],
            "-H: '************0009-bin' ends in -bin"
        ),
        (
            ["call", "127.0.0.1:1", "x.Y/Z", "-H", "tokenet-4761000010000009: x", "--plaintext"],
            "-H: 'tokenet-************0009' uses the prefix"
        ),
    ])
    func aCardNumberInAnArgumentIsMaskedInTheError(arguments: [String], message: String) async throws {
        let result = try await runTokenet(arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains("0000"), "\(result.stderr)")
    }

    /// A 100 KB method name is a bad option (status 2), as 100 KB of -H is: it was sent, and the client's own
    /// frame limit ended the call with RESOURCE_EXHAUSTED (72).
    @Test func aMethodNameTooLongToSendIsABadOption() async throws {
        try await expectUsageError(
            ["call", address, "a.B/" + String(repeating: "C", count: 100_000), "--plaintext"],
            "call: the method name is 100004 bytes long; a method name takes at most 2048")
    }

    @Test func deadlinesAreDecimalAndAtMostADay() async throws {
        try await expectUsageError(["list", address, "--deadline", "86401s", "--plaintext"], "limit of one day")
        try await expectUsageError(["list", address, "--deadline", "23h60m1s", "--plaintext"], "limit of one day")
        for text in ["0x10s", "1e3ms", "infs", "1.2.3s", "1m30", "1m-30s", "s5", "0m0s", "5s 1ms"] {
            try await expectUsageError(
                ["list", address, "--deadline", text, "--plaintext"], "expected a positive duration")
        }
        try await expectUsageError(
            ["list", address, "--deadline", "1m30", "--plaintext"], "got '1m30' (with a unit: 1m30s for seconds)")
        try await expectUsageError(
            ["list", address, "--deadline", "5S", "--plaintext"], "got '5S' (units are lower case: 5s)")
        // Go adds up `1s1s` to 2 s; a unit twice or out of order is more likely a slip.
        try await expectUsageError(
            ["list", address, "--deadline", "1s1s", "--plaintext"],
            "got '1s1s' (each unit once, the longest first, as in 1m30s)")
        // A bare number: the unit is asked for, not guessed.
        try await expectUsageError(
            ["list", address, "--deadline", "5", "--plaintext"],
            "list: --deadline: expected a positive duration such as 5s, 200ms, 1m or 1m30s, got '5' (with a unit: 5s "
                + "for seconds)")
        // A zero gets no hint to add a unit: `0s` is refused as well.
        try await expectUsageError(
            ["list", address, "--deadline", "0", "--plaintext"],
            "list: --deadline: expected a positive duration such as 5s, 200ms, 1m or 1m30s, got '0'\n")
    }

    /// A URL pasted for the address is named as one, with the address to give instead.
    /// A usage error quotes what was typed on one line, a line break escaped, and cut short when it is long.
    @Test func aUsageErrorStaysOnOneShortLine() async throws {
        try await expectUsageError(["list", address, "--deadline", "1s\n2s", "--plaintext"], "got '1s\\u{A}2s'\n")
        let long = try await runTokenet(
            ["list", address, "--deadline", String(repeating: "1ms", count: 3000) + "x", "--plaintext"])
        #expect(long.status == 2)
        let lines = long.stderr.split(separator: "\n")
        #expect(lines.count == 2, "\(lines.count) lines")
        // The message is the prefix, the 9,001 characters typed and the closing quote; 1,024 of it are kept.
        let first = String(lines.first ?? "")
        #expect(first.hasSuffix(" characters, the last \(9_086 - 1_024) cut)"), "\(first)")
        #expect(first.count < 1_024 + 100, "\(first.count)")
    }

    /// `-v` belongs to `call`, and takes no value.
    @Test func verboseIsACallSwitch() async throws {
        try await expectUsageError(
            ["call", address, "x.Y/Z", "--verbose=yes", "--plaintext"], "call: -v takes no value")
        try await expectUsageError(["list", address, "-v", "--plaintext"], "list: unknown option '-v'")
    }

    /// An IPv6 address with a zone (`%eth0`, for a link-local address) is refused for its zone, not as no address.
    @Test func anIPv6ZoneIsNamedAsThePartInTheWay() async throws {
        try await expectUsageError(
            ["list", "[fe80::1%eth0]:7001", "--plaintext"],
            "list: '[fe80::1%eth0]:7001' names the IPv6 zone %eth0, and Tokenet takes addresses without one: give a "
                + "global or loopback IPv6 address, such as [::1]:7001, or an IPv4 one")
        try await expectUsageError(
            ["proxy", "--to", "[::1%lo]:7001"], "proxy: --to: '[::1%lo]:7001' names the IPv6 zone %lo, and Tokenet")
    }

    @Test func aURLForTheAddressIsNamedWithTheAddressInIt() async throws {
        for url in ["http://127.0.0.1:7001", "grpc://127.0.0.1:7001/", "https://[::1]:7001/path"] {
            try await expectUsageError(
                ["list", url, "--plaintext"], "list: '\(url)' is a URL; give the address alone, HOST:PORT, such as ")
        }
        try await expectUsageError(["list", "http://[::1]:7001", "--plaintext"], "such as [::1]:7001")
    }

    /// Swift would turn the byte 0xFF into U+FFFD and send that; the command refuses it as it refuses such input.
    @Test func anArgumentThatIsNotUTF8IsRefused() async throws {
        let process = try SpawnedProcess(
            "/bin/sh",
            [
                "-c",
                #"exec "$0" call "$1" tokenet.health.v1.Health/Check --plaintext -d "$(printf '{"service": "\377"}')""#,
                try BuiltExecutables.url(of: "tokenet").path, address,
            ], standardOutput: .nullDevice, standardError: .pipe)
        let (stderr, termination) = try await offThePool {
            (
                String(decoding: process.standardError!.readDataToEndOfFile(), as: UTF8.self),
                process.waitUntilExit(killingAfter: 60)
            )
        }
        #expect(termination.status == 2, "\(stderr)")
        #expect(stderr.contains("is not UTF-8 text"), "\(stderr)")
    }
}
