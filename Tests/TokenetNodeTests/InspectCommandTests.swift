import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// Runs `tokenet list`, `describe` and `call` against a real `tsp-node` process over mutual TLS, as the operator.
///
/// Each test starts its own node (so tests stay independent when they run in parallel) and stops it when done.
@Suite final class InspectCommandTests {
    let node: LaunchedProcess
    let address: String
    let pki = DevelopmentPKI.shared

    init() async throws {
        let data = try TemporaryDirectory()
        let readyFile = data.path("ready.json")
        node = try LaunchedProcess.tspNode(in: data)
        dataDirectory = data
        do {
            address = try await Self.waitForReadyFile(readyFile, of: node.process).listen
        } catch {
            // A class whose init throws before every property is set is never deinitialized: stop the node here.
            node.process.send(SIGTERM)
            throw error
        }
    }

    private let dataDirectory: TemporaryDirectory

    /// The node stops without this thread waiting for it (one of the test runner's few; 34 tests each held one for
    /// a second or so): a thread of its own waits, bounded, and holds the data directory until the node is gone.
    deinit {
        if node.process.isRunning {
            node.process.send(SIGTERM)
            reapOffThePool(node.process, killingAfter: 30, keeping: dataDirectory)
        }
    }

    /// The operator's identity as flags.
    var tls: [String] {
        ["--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key")]
    }

    /// Secrets that cannot be written (a full disk; /dev/full here) were lost without a word: a capture then
    /// showed some connections as opaque records. The CLI says so, once.
    @Test func aKeyLogThatStopsTakingSecretsIsSaidOnce() async throws {
        let result = try await runTokenet(["list", address] + tls, environment: ["SSLKEYLOGFILE": "/dev/full"])
        #expect(result.status == 0, "\(result.stderr)")
        let warning =
            "tokenet: warning: SSLKEYLOGFILE=/dev/full: a TLS secret could not be written (No space left on device)"
        #expect(result.stderr.components(separatedBy: warning).count == 2, "\(result.stderr)")
    }

    /// `tsp encrypt-card` makes the card data a wallet sends, against the running TSP's key: a wallet of one's own
    /// sends it in CheckEligibility, and the TSP reads the card (here, of no registered issuer, by its last four
    /// digits). The card number is nowhere in the output.
    @Test func encryptCardMakesCardDataTheTSPReads() async throws {
        let encrypted = try await runTokenet(
            ["tsp", "encrypt-card", address, "--pan", "-", "--exp", "12/29", "--cvc", "-"] + tls,
            stdin: "4761 0000 1000 0009\n123\n")
        #expect(encrypted.status == 0, "\(encrypted.stderr)")
        // The whole number, in any grouping: its first or last four alone turn up by chance in the key's hex
        // fingerprint about once in 500 runs.
        #expect(
            !encrypted.stdout.contains("4761000010000009") && !encrypted.stdout.contains("4761 0000 1000 0009"),
            "\(encrypted.stdout)")
        let card = try CardV1.EncryptedCardData(jsonString: encrypted.stdout)
        #expect(card.jwe.split(separator: ".", omittingEmptySubsequences: false).count == 5)
        var request = TspV1.CheckEligibilityRequest(
            requestID: "encrypt-card-1", eligibilityData: TspV1.EligibilityData(language: "en", inputMethod: .manual),
            walletAccountID: "acct-1", device: CardV1.DeviceInfo(deviceID: "dev-1"))
        request.instrument = .encryptedCardData(card)
        let walletTLS = [
            "--cacert", pki.path("ca.pem"), "--cert", pki.path("wallet.pem"), "--key", pki.path("wallet.key"),
        ]
        let checked = try await runTokenet(
            ["call", address, "tokenet.tsp.v1.Provisioning/CheckEligibility", "-d", try request.jsonString()]
                + walletTLS)
        #expect(checked.status == 0, "\(checked.stderr)")
        let response = try TspV1.CheckEligibilityResponse(jsonString: checked.stdout)
        #expect(response.panLast4 == "0009" && response.reason == .issuerNotParticipating, "\(checked.stdout)")

        let wrong = try await runTokenet(["tsp", "encrypt-card", address, "--pan", "-", "--exp", "13/29"] + tls)
        #expect(wrong.status == 2 && wrong.stderr.contains("the expiry month 13 is not a month"), "\(wrong.stderr)")
    }

    /// `tsp keys`, `rotate-key` and `forget-key` against a running TSP: card data encrypted before a rotation is
    /// read until its key is forgotten, then refused with the key it names; `encrypt-card` follows the new key.
    @Test func theOperatorRotatesAndForgetsTheCardDataKey() async throws {
        func keyLines() async throws -> [String] {
            let listed = try await runTokenet(["tsp", "keys", address] + tls)
            #expect(listed.status == 0, "\(listed.stderr)")
            return listed.stdout.split(separator: "\n").map(String.init)
        }
        func encryptCard() async throws -> CardV1.EncryptedCardData {
            let encrypted = try await runTokenet(
                ["tsp", "encrypt-card", address, "--pan", "-", "--exp", "12/29"] + tls, stdin: "4761000010000009\n")
            #expect(encrypted.status == 0, "\(encrypted.stderr)")
            return try CardV1.EncryptedCardData(jsonString: encrypted.stdout)
        }
        func check(_ card: CardV1.EncryptedCardData) async throws -> ProcessResult {
            var request = TspV1.CheckEligibilityRequest(
                requestID: UUID().uuidString,
                eligibilityData: TspV1.EligibilityData(language: "en", inputMethod: .manual),
                walletAccountID: "acct-1", device: CardV1.DeviceInfo(deviceID: "dev-1"))
            request.instrument = .encryptedCardData(card)
            let walletTLS = [
                "--cacert", pki.path("ca.pem"), "--cert", pki.path("wallet.pem"), "--key", pki.path("wallet.key"),
            ]
            return try await runTokenet(
                ["call", address, "tokenet.tsp.v1.Provisioning/CheckEligibility", "-d", try request.jsonString()]
                    + walletTLS)
        }
        let first = try await keyLines()
        #expect(first.count == 1 && first[0].hasPrefix("current  "), "\(first)")
        let firstKid = String(first[0].dropFirst("current  ".count))
        let before = try await encryptCard()
        #expect(before.publicKeyIdentifier == firstKid)

        let rotated = try await runTokenet(["tsp", "rotate-key", address] + tls)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let second = try await keyLines()
        #expect(second.count == 2 && second[1] == "retired  " + firstKid, "\(second)")
        let secondKid = String(second[0].dropFirst("current  ".count))
        #expect(rotated.stdout.hasPrefix("rotated: the current key is now \(secondKid); \(firstKid) is retired"))
        #expect(rotated.stdout.contains("tokenet tsp forget-key \(address) \(firstKid)"), "\(rotated.stdout)")
        #expect(try await encryptCard().publicKeyIdentifier == secondKid)
        #expect(try await check(before).status == 0)

        let forgotten = try await runTokenet(["tsp", "forget-key", address, firstKid] + tls)
        #expect(forgotten.status == 0, "\(forgotten.stderr)")
        #expect(forgotten.stdout.hasPrefix("forgotten: card data encrypted to \(firstKid) is refused from now on"))
        #expect(try await keyLines() == ["current  " + secondKid])
        let refused = try await check(before)
        #expect(refused.status == 64 + 3, "\(refused.stderr)")
        #expect(refused.stderr.contains("INVALID_ARGUMENT") && refused.stderr.contains("no decryption key has kid"))

        let current = try await runTokenet(["tsp", "forget-key", address, secondKid] + tls)
        #expect(
            current.status == 64 + 9 && current.stderr.contains("is the current card-data key"), "\(current.stderr)")
        let missing = try await runTokenet(["tsp", "forget-key", address] + tls)
        #expect(missing.status == 2 && missing.stderr.contains("missing KID"), "\(missing.stderr)")
    }

    @Test func listShowsTheServedServices() async throws {
        let result = try await runTokenet(["list", address] + tls)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout
                == "tokenet.health.v1.Health\ntokenet.reflection.v1.Reflection\ntokenet.tsp.v1.Authentication\n"
                + "tokenet.tsp.v1.Enrolment\ntokenet.tsp.v1.Idv\ntokenet.tsp.v1.IssuerCardUpdates\n"
                + "tokenet.tsp.v1.IssuerIdv\ntokenet.tsp.v1.Issuers\ntokenet.tsp.v1.Notifications\n"
                + "tokenet.tsp.v1.Provisioning\ntokenet.tsp.v1.TokenLifecycle\ntokenet.tsp.v1.Transactions\n"
                + "tokenet.tsp.v1.TspControl\n")
    }

    @Test func listShowsAServicesMethodsWithTheirTypes() async throws {
        let result = try await runTokenet(["list", address, "tokenet.health.v1.Health"] + tls)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.split(separator: "\n") == [
                "tokenet.health.v1.Health.Check(tokenet.health.v1.HealthCheckRequest) returns "
                    + "(tokenet.health.v1.HealthCheckResponse)",
                "tokenet.health.v1.Health.Watch(tokenet.health.v1.HealthCheckRequest) returns "
                    + "(stream tokenet.health.v1.HealthCheckResponse)",
            ])
    }

    @Test func describeServicePrintsAProtoListingWithItsMessages() throws {
        let result = try runTokenet(["describe", address, "tokenet.health.v1.Health"] + tls)
        #expect(result.status == 0, "\(result.stderr)")
        for expected in [
            "tokenet.health.v1.Health is a service:",
            "service tokenet.health.v1.Health {",
            // Each method and field under its .proto comment, as the node's reflection sent it.
            "  // The current status, then every change, until the call ends. A service the node does not serve is "
                + "reported\n  // SERVICE_UNKNOWN and the stream stays open (as gRPC's Watch does), where Check answers "
                + "NOT_FOUND.\n"
                + "  rpc Watch(tokenet.health.v1.HealthCheckRequest) returns (stream tokenet.health.v1.HealthCheckResponse) {\n"
                + "    option idempotency_level = NO_SIDE_EFFECTS;\n  }",
            "message tokenet.health.v1.HealthCheckRequest {\n"
                + "  // The service to check, such as \"tokenet.tsp.v1.Provisioning\"; empty for the node as a whole.\n"
                + "  string service = 1;\n}",
            "message tokenet.health.v1.HealthCheckResponse {\n  tokenet.health.v1.ServingStatus status = 1;\n}",
            "enum tokenet.health.v1.ServingStatus {", "  SERVING_STATUS_SERVING = 1;",
        ] {
            #expect(result.stdout.contains(expected), "missing \(expected) in:\n\(result.stdout)")
        }
    }

    /// A method only some roles may call names them as its .proto does: a wallet's developer learnt it from
    /// PERMISSION_DENIED.
    @Test func describeNamesTheRolesThatMayCallAMethod() async throws {
        let method = try await runTokenet(["describe", address, "tokenet.tsp.v1.TspControl.RotateEncryptionKey"] + tls)
        #expect(method.status == 0, "\(method.stderr)")
        #expect(
            method.stdout.contains(
                "rpc RotateEncryptionKey(tokenet.tsp.v1.RotateEncryptionKeyRequest) returns "
                    + "(tokenet.tsp.v1.RotateEncryptionKeyResponse) {  // /tokenet.tsp.v1.TspControl/RotateEncryptionKey\n"
                    + "  option (tokenet.rpc.v1.allowed_roles) = \"operator\";\n}\n"), "\(method.stdout)")
        let service = try await runTokenet(["describe", address, "tokenet.tsp.v1.Provisioning"] + tls)
        let getKeys: [String] = [
            "  rpc GetEncryptionKeys(tokenet.tsp.v1.GetEncryptionKeysRequest) returns "
                + "(tokenet.tsp.v1.GetEncryptionKeysResponse) {",
            "    option idempotency_level = NO_SIDE_EFFECTS;",
            "    option (tokenet.rpc.v1.allowed_roles) = \"wallet\";",
            "    option (tokenet.rpc.v1.allowed_roles) = \"issuer\";",
            "    option (tokenet.rpc.v1.allowed_roles) = \"operator\";",
            "  }",
        ]
        #expect(service.stdout.contains(getKeys.joined(separator: "\n") + "\n"), "\(service.stdout)")
        let health = try await runTokenet(["describe", address, "tokenet.health.v1.Health"] + tls)
        #expect(!health.stdout.contains("allowed_roles"), "\(health.stdout)")
        // A method that changes nothing says so, as its .proto does; one that changes something does not.
        #expect(
            health.stdout.contains(
                "rpc Check(tokenet.health.v1.HealthCheckRequest) returns (tokenet.health.v1.HealthCheckResponse) {\n"
                    + "    option idempotency_level = NO_SIDE_EFFECTS;\n  }\n"), "\(health.stdout)")
        #expect(!method.stdout.contains("idempotency_level"), "\(method.stdout)")
    }

    @Test func describeMessageShowsJSONNames() async throws {
        let result = try await runTokenet(["describe", address, "tokenet.reflection.v1.MethodDescription"] + tls)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#"  string request_type = 3 [json_name = "requestType"];"#))
    }

    @Test func describeUnknownSymbolIsNotFound() async throws {
        let result = try await runTokenet(["describe", address, "tokenet.nothing.v1.Nothing"] + tls)
        #expect(result.status == 64 + 5)
        #expect(result.stderr.hasPrefix("ERROR: NOT_FOUND: "))
        #expect(result.stderr.contains("'tokenet.nothing.v1.Nothing'"))
        #expect(result.stdout.isEmpty)
    }

    /// A package with no service of its own was NOT_FOUND, though its types could each be described by name.
    @Test func describeOfAPackageWithoutServicesListsItsTypes() async throws {
        let result = try await runTokenet(["describe", address, "tokenet.card.v1"] + tls)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.hasPrefix("tokenet.card.v1 is a package with no service on this node; its services use:\n"),
            "\(result.stdout)")
        #expect(result.stdout.contains("\n  message tokenet.card.v1.EncryptedCardData\n"), "\(result.stdout)")
        #expect(result.stdout.contains("\n  enum tokenet.card.v1.TokenState\n"), "\(result.stdout)")
    }

    /// A symbol of another node's API was answered with the node's bare NOT_FOUND; `call` named the right node.
    @Test func describeOfAnotherNodesSymbolNamesThatNode() async throws {
        let result = try await runTokenet(["describe", address, "tokenet.wallet.v1.AddCardRequest"] + tls)
        #expect(result.status == 64 + 5, "\(result.stderr)")
        #expect(
            result.stderr
                == "ERROR: NOT_FOUND: \(address) does not describe tokenet.wallet.v1.AddCardRequest, which a "
                + "wallet-node serves; it is a tsp-node: give the address of a wallet-node\n")
    }

    /// `list` of another node's service or package names the node that serves it, as `describe` does; a package
    /// whose types this node's services use says so and points at `describe`. Both said the node served nothing of
    /// the name.
    @Test func listOfAnotherNodesServiceOrATypesOnlyPackageSaysWhy() async throws {
        for (symbol, node) in [
            ("tokenet.wallet.v1.WalletControl", "a wallet-node"), ("tokenet.wallet.v1", "a wallet-node"),
            ("tokenet.issuer", "an issuer-node"),
        ] {
            let result = try await runTokenet(["list", address, symbol] + tls)
            #expect(result.status == 64 + 5, "\(result.stderr)")
            #expect(
                result.stderr
                    == "ERROR: NOT_FOUND: \(address) does not describe \(symbol), which \(node) serves; it is a "
                    + "tsp-node: give the address of \(node)\n")
        }
        let package = try await runTokenet(["list", address, "tokenet.card.v1"] + tls)
        #expect(package.status == 64 + 5, "\(package.stderr)")
        #expect(
            package.stderr.hasPrefix(
                "ERROR: NOT_FOUND: tokenet.card.v1 is a package with no service on this node; its "),
            "\(package.stderr)")
        #expect(
            package.stderr.hasSuffix("(tokenet describe \(address) tokenet.card.v1 lists them)\n"), "\(package.stderr)")
    }

    /// The TLS files come from the environment here.
    @Test func callHealthCheckPrintsTheResponseAsJSON() async throws {
        let environment = [
            "TOKENET_CACERT": pki.path("ca.pem"), "TOKENET_CERT": pki.path("operator.pem"),
            "TOKENET_KEY": pki.path("operator.key"),
        ]
        let result = try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Check", "-d", "{}"], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{\n  \"status\": \"SERVING_STATUS_SERVING\"\n}\n")
    }

    @Test func callReadsTheRequestFromStandardInput() async throws {
        let result = try await runTokenet(
            ["call", address, "/tokenet.health.v1.Health/Check", "-d", "@", "-H", "X-Request-Id: 42"] + tls,
            stdin: #"{"service": "tokenet.reflection.v1.Reflection"}"#)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""status": "SERVING_STATUS_SERVING""#))
    }

    @Test func callToAnUnknownMethodIsUnimplemented() async throws {
        let result = try await runTokenet(["call", address, "tokenet.health.v1.Health/Nope", "-d", "{}"] + tls)
        #expect(result.status == 64 + 12)
        #expect(result.stderr.hasPrefix("ERROR: UNIMPLEMENTED: "))
        #expect(result.stderr.contains("/tokenet.health.v1.Health/Nope"))
    }

    /// An error message that echoes what the caller sent leaves the node with anything like a card number masked.
    @Test func aCardNumberEchoedInAnErrorIsMasked() async throws {
        let result = try await runTokenet(
            [
                "call", address, "tokenet.tsp.v1.TspControl/TokenHistory", "-d",
                #"{"digitalCardId": "4761000010000009"}"#,
            ]
                + tls)
        #expect(result.status == 64 + 5, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("ERROR: NOT_FOUND: "))
        #expect(result.stderr.contains("************0009"), "\(result.stderr)")
        #expect(!result.stderr.contains("4761000010000009"))
    }

    @Test func callWithBadJSONNamesTheField() async throws {
        let result = try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Check", "-d", #"{"servce": ""}"#] + tls)
        #expect(result.status == 2)
        #expect(result.stderr.contains("tokenet.health.v1.HealthCheckRequest"))
        #expect(result.stderr.contains(#""servce""#))
        #expect(result.stdout.isEmpty)
    }

    /// `-d` may hold several JSON objects, one per request; a unary method takes exactly one.
    @Test func callOfAUnaryMethodWithTwoRequestsIsAUsageError() async throws {
        let result = try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Check", "-d", #"{} {"service": "}{"}"#] + tls)
        #expect(result.status == 2)
        #expect(result.stderr.contains("takes exactly one request message; -d holds 2"))
    }

    /// `-d @` and a key read from standard input share one input: what failed was named instead ("the request JSON
    /// is not valid", or the key "is empty"), whichever read lost.
    @Test func dataFromStandardInputWithAKeyFromStandardInputIsRefused() async throws {
        let pki = DevelopmentPKI.shared
        let key = try String(contentsOfFile: pki.path("operator.key"), encoding: .utf8)
        for keyPath in ["/dev/stdin", "/dev/fd/0"] {
            let result = try await runTokenet(
                [
                    "call", "127.0.0.1:1", "tokenet.health.v1.Health/Check", "-d", "@", "--key", keyPath, "--cert",
                    pki.path("operator.pem"), "--cacert", pki.path("ca.pem"),
                ], stdin: key)
            #expect(result.status == 2, "\(result.stderr)")
            #expect(
                result.stderr.hasPrefix(
                    "tokenet: call: -d @ and --key \(keyPath) (given by --key or TOKENET_KEY) both read standard "
                        + "input; give one of them as a file"), "\(result.stderr)")
        }
    }

    /// Watch sends the current status and then waits for changes; none come, so the deadline ends the call.
    @Test func watchPrintsTheFirstStatusThenEndsAtTheDeadline() async throws {
        let result = try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Watch", "-d", "{}", "--deadline", "8s"] + tls)
        #expect(result.status == 64 + 4, "\(result.stderr)")
        #expect(result.stdout == "{\n  \"status\": \"SERVING_STATUS_SERVING\"\n}\n")
        // Told against the --deadline given, with what was left of it for the call after connecting, or, when the
        // node's deadline timer ended the call first (a race on a loaded machine), saying so.
        #expect(
            result.stderr.hasPrefix(
                "ERROR: DEADLINE_EXCEEDED: the call did not finish within the command's deadline of 8000 ms ("),
            "\(result.stderr)")
        #expect(
            untraced(result.stderr).hasSuffix(" of it left when the call started)\n")
                || untraced(result.stderr).hasSuffix("(the node ended it as the deadline passed)\n"),
            "\(result.stderr)")
    }

    /// `-v` tells, on stderr, what the call sent and how it ended; stdout keeps the response alone.
    @Test func verboseTellsWhatTheCallSentAndHowItEnded() async throws {
        let result = try await runTokenet(
            [
                "call", address, "tokenet.health.v1.Health/Check", "-v", "-H", "x-request-id: 42", "-H", "x-bin: AQID",
                // A card number in a binary value, base64 of "4761000010000009": masked as decode masks it.
                "-H", "x-card-bin: NDc2MTAwMDAxMDAwMDAwOQ==",
                // A key that holds one, and base64 that reads as one itself.
                "-H", "x-4761000010000009: v", "-H", "x-raw-bin: 4761000010000009",
            ] + tls)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{\n  \"status\": \"SERVING_STATUS_SERVING\"\n}\n")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(
            lines.first
                == "Method /tokenet.health.v1.Health/Check (unary): tokenet.health.v1.HealthCheckRequest -> "
                + "tokenet.health.v1.HealthCheckResponse", "\(lines)")
        #expect(lines.contains("Node \(address): tokenet://tsp/tsp-1 over TLS"), "\(lines)")
        #expect(lines.contains("Request metadata (6 entries):"), "\(lines)")
        #expect(lines.contains("  x-************0009: v"), "\(lines)")
        #expect(lines.contains("  x-raw-bin: ************0009 (12 bytes)"), "\(lines)")
        #expect(lines.contains("  x-request-id: 42"), "\(lines)")
        #expect(lines.contains("  x-bin: AQID (3 bytes)"), "\(lines)")
        #expect(
            lines.contains("  x-card-bin: KioqKioqKioqKioqMDAwOQ== (16 bytes, masked: they hold a card number)"),
            "\(lines)")
        #expect(lines.contains { $0.hasPrefix("  tokenet-trace-id: ") }, "\(lines)")
        let summary = try #require(lines.last)
        #expect(summary.hasPrefix("Sent 1 request, received 1 response in ") && summary.hasSuffix(": OK"), "\(summary)")

        let failed = try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Check", "--verbose", "-d", #"{"service": "nope"}"#] + tls)
        #expect(failed.status == 64 + 5, "\(failed.stderr)")
        let failedLines = untraced(failed.stderr).split(separator: "\n").map(String.init)
        #expect(failedLines.count >= 2, "\(failedLines)")
        #expect(failedLines.dropLast().last?.hasPrefix("Sent 1 request, received 0 responses in ") == true)
        #expect(failedLines.dropLast().last?.hasSuffix(": NOT_FOUND") == true, "\(failedLines)")
        #expect(failedLines.last?.hasPrefix("ERROR: NOT_FOUND: ") == true, "\(failedLines)")
    }

    /// A deadline of several parts, as Go writes durations (`1m30s`), adds them up.
    @Test func aDeadlineOfSeveralPartsAddsThemUp() async throws {
        let result = try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Watch", "-d", "{}", "--deadline", "0m7s500ms"] + tls)
        #expect(result.status == 64 + 4, "\(result.stderr)")
        #expect(result.stderr.contains("the command's deadline of 7500 ms"), "\(result.stderr)")
    }

    /// A reader that stops early (`tokenet call … Watch | head -1`) ends a stream that would never end by itself: the
    /// command cancels the call and exits 0. It used to keep the watch open, so the shell's pipeline never returned.
    @Test func aStreamEndsWhenNobodyReadsItsOutput() async throws {
        let process = try SpawnedProcess(
            try BuiltExecutables.url(of: "tokenet").path,
            ["call", address, "tokenet.health.v1.Health/Watch", "-d", "{}"] + tls, standardInput: .nullDevice,
            standardOutput: .pipe, standardError: .nullDevice)
        let output = try #require(process.standardOutput)
        let first = output.availableData
        #expect(String(decoding: first, as: UTF8.self).contains("SERVING_STATUS_SERVING"))
        try output.close()
        let limit = Date().addingTimeInterval(20)
        while process.isRunning && Date() < limit { try await Task.sleep(for: .milliseconds(20)) }
        let endedByItself = !process.isRunning
        let termination = process.waitUntilExit(killingAfter: 0)
        #expect(endedByItself, "tokenet kept the stream open after its reader went away")
        #expect(termination == .init(reason: .exit, status: 0))
    }

    /// No handshake finishes in a microsecond: the caller's deadline ran out, which says nothing about the node.
    @Test func aDeadlineThatRunsOutWhileConnectingIsDeadlineExceeded() async throws {
        let result = try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Check", "--deadline", "1us"] + tls)
        #expect(result.status == 64 + 4, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("ERROR: DEADLINE_EXCEEDED: "), "\(result.stderr)")
        #expect(result.stderr.contains("while connecting to \(address)"), "\(result.stderr)")
        // Said in the unit it was given in, not as a fraction of a millisecond ("0.001 ms").
        #expect(result.stderr.contains("the deadline (1 µs) ran out"), "\(result.stderr)")
    }

    @Test func plaintextCallsReachAPlaintextNode() async throws {
        let data = try TemporaryDirectory()
        let readyFile = data.path("ready.json")
        let plain = try LaunchedProcess(
            "tsp-node",
            ["--listen", "127.0.0.1:0", "--data-dir", data.path("data"), "--ready-file", readyFile, "--plaintext"])
        defer {
            plain.process.send(SIGTERM)
            plain.process.waitUntilExit(killingAfter: 30)
        }
        let plainAddress = try await Self.waitForReadyFile(readyFile, of: plain.process).listen
        let result = try await runTokenet(["call", plainAddress, "tokenet.health.v1.Health/Check", "--plaintext"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{\n  \"status\": \"SERVING_STATUS_SERVING\"\n}\n")
    }

    @Test func plaintextClientOfATLSNodeFailsClearly() async throws {
        let result = try await runTokenet(
            ["call", address, "tokenet.health.v1.Health/Check", "--plaintext", "--deadline", "5s"])
        #expect(result.status != 0)
        #expect(result.stderr.hasPrefix("ERROR: UNAVAILABLE") || result.stderr.contains("cannot connect"))
    }

    @Test func missingTLSFilesAreAUsageError() async throws {
        let result = try await runTokenet(["list", address, "--cacert", pki.path("ca.pem")], environment: [:])
        #expect(result.status == 2)
        #expect(result.stderr.contains("missing --cert, --key"))
    }

    @Test func aKeyThatDoesNotMatchTheCertificateIsAConnectionFailure() async throws {
        let result = try await runTokenet(
            [
                "list", address, "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                pki.path("tsp.key"),
            ])
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot load the TLS identity"))
        #expect(!result.stderr.contains("error:"), "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "the private key \(pki.path("tsp.key")) does not belong to the certificate \(pki.path("operator.pem"))"),
            "\(result.stderr)")
    }

    /// A TLS file that cannot be read is named with its option and variable and the system's reason, before any
    /// TLS setup: OpenSSL's three error codes for it named neither.
    @Test func anUnreadableTLSFileIsNamed() async throws {
        let directory = try TemporaryDirectory()
        let missing = directory.path("missing.pem")
        let folder = directory.url.path
        let (ca, cert, key) = (pki.path("ca.pem"), pki.path("operator.pem"), pki.path("operator.key"))
        for (files, message) in [
            (
                [missing, cert, key],
                "--cacert \(missing) (given by --cacert or TOKENET_CACERT): No such file or directory"
            ),
            ([ca, cert, folder], "--key \(folder) (given by --key or TOKENET_KEY): Is a directory"),
        ] {
            let result = try await runTokenet(
                ["list", address, "--cacert", files[0], "--cert", files[1], "--key", files[2]])
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr == "tokenet: cannot read \(message)\n", "\(result.stderr)")
        }
    }

    /// A node certificate this side cannot verify names the file to fix: OpenSSL's reason alone ("self-signed
    /// certificate in certificate chain") did not.
    @Test func aCAThatDidNotSignTheNodeIsNamed() async throws {
        let caFile = pki.untrustedPath("ca.pem")
        let result = try await runTokenet(
            [
                "list", address, "--deadline", "20s", "--cacert", caFile, "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"),
            ])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains("its certificate is not signed by the CA of --cacert \(caFile)"), "\(result.stderr)")
        #expect(result.stderr.contains("self-signed certificate in certificate chain"), "\(result.stderr)")
        #expect(!result.stderr.contains("error:"), "\(result.stderr)")
    }

    /// The node checks a client's certificate after the client's TLS 1.3 handshake; its refusal arrives as an alert,
    /// which the command reports as a certificate to fix (exit status 1), with the node's reason.
    @Test func aCertificateFromAnotherCAIsRefusedWithTheReason() async throws {
        let result = try await runTokenet(
            [
                "call", address, "tokenet.health.v1.Health/Check", "--deadline", "20s", "--cacert", pki.path("ca.pem"),
                "--cert", pki.path("untrusted/operator.pem"), "--key", pki.path("untrusted/operator.key"),
            ])
        #expect(result.reason == .exit)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("refused this client's certificate (unknown CA)"), "\(result.stderr)")
        #expect(result.stderr.contains("check --cert \(pki.path("untrusted/operator.pem"))"), "\(result.stderr)")
    }

    /// What the node would refuse anyway is found before connecting, with a reason that names the file.
    @Test func aCertificateWithoutATokenetIdentityIsRefusedBeforeConnecting() async throws {
        for name in ["plain", "ca"] {
            let result = try await runTokenet(
                [
                    "call", address, "tokenet.health.v1.Health/Check", "--cacert", pki.path("ca.pem"), "--cert",
                    pki.path("\(name).pem"), "--key", pki.path("\(name).key"),
                ])
            #expect(result.status == 1, "\(result.stderr)")
            #expect(
                result.stderr.contains("cannot use the client certificate (given by --cert or TOKENET_CERT)"),
                "\(result.stderr)")
            // The CA's own certificate is refused as a CA's before its missing name is looked at.
            let reason = name == "ca" ? "is a CA certificate (basicConstraints CA:TRUE)" : "has no tokenet://ROLE/ID"
            #expect(result.stderr.contains("\(name).pem \(reason)"), "\(result.stderr)")
        }
    }

    /// Said with what to do, not as the socket's "io: connect failed: … (errno 111)".
    @Test func aRefusedConnectionIsAConnectionFailure() async throws {
        for arguments in [["list", "127.0.0.1:1"] + tls, ["wallet", "cards", "127.0.0.1:1", "--plaintext"]] {
            let result = try await runTokenet(arguments)
            #expect(result.status == 1)
            #expect(
                result.stderr
                    == "tokenet: cannot connect to 127.0.0.1:1: nothing accepts connections there (connection "
                    + "refused); start the node, or give the address it listens on (its READY line says "
                    + "listen=HOST:PORT)\n",
                "\(result.stderr)")
        }
    }

    @Test func everyInspectingCommandHasHelp() async throws {
        for command in ["list", "describe", "call"] {
            let result = try await runTokenet([command, "--help"])
            #expect(result.status == 0)
            #expect(result.stdout.hasPrefix("Usage: tokenet \(command) ADDR"))
            #expect(result.stdout.contains("--cacert FILE"))
        }
    }

    /// Polls for the ready file, bounded by a generous deadline and stopping early if the node exits; it sleeps
    /// between looks instead of blocking a thread of the cooperative pool that every other test needs.
    private static func waitForReadyFile(_ path: String, of process: SpawnedProcess) async throws -> ReadyInfo {
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline, process.isRunning {
            if FileManager.default.fileExists(atPath: path) { return try ReadyFile.read(from: path) }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw NodeDidNotStart(running: process.isRunning)
    }

    struct NodeDidNotStart: Error {
        var running: Bool
    }
}

/// `runTokenet` for async tests: the same, waiting off the cooperative pool (`offThePool`).
func runTokenet(
    _ arguments: [String], stdin: String = "", standardInput: FileHandle? = nil, environment: [String: String]? = nil
) async throws -> ProcessResult {
    try await offThePool {
        try runTokenet(arguments, stdin: stdin, standardInput: standardInput, environment: environment) as ProcessResult
    }
}

/// Runs the built `tokenet` with `stdin` (or the open file `standardInput`) as its standard input and, when given,
/// only `environment`; one that outlives a minute is killed.
func runTokenet(
    _ arguments: [String], stdin: String = "", standardInput: FileHandle? = nil, environment: [String: String]? = nil
) throws -> ProcessResult {
    try runProgram(
        try BuiltExecutables.url(of: "tokenet").path, arguments, stdin: stdin, standardInput: standardInput,
        environment: environment)
}

/// Runs `program` as `runTokenet` runs the built `tokenet`.
func runProgram(
    _ program: String, _ arguments: [String], stdin: String = "", standardInput: FileHandle? = nil,
    environment: [String: String]? = nil
) throws -> ProcessResult {
    let directory = try TemporaryDirectory()
    let input = directory.path("stdin")
    try Data(stdin.utf8).write(to: URL(fileURLWithPath: input))
    // Through posix_spawn, not `Process`: this is the test process's most frequent spawn (`SpawnedProcess`).
    let termination = try SpawnedProcess(
        program, arguments, environment: environment,
        standardInput: standardInput.map { .descriptor($0.fileDescriptor) } ?? .file(input),
        standardOutput: .file(directory.path("stdout")), standardError: .file(directory.path("stderr"))
    ).waitUntilExit(killingAfter: 60)
    return ProcessResult(
        status: termination.status, reason: termination.reason,
        stdout: try String(contentsOfFile: directory.path("stdout"), encoding: .utf8),
        stderr: try String(contentsOfFile: directory.path("stderr"), encoding: .utf8))
}
