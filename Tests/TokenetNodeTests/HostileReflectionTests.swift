import Foundation
import Testing
import TokenetRPC
import TokenetWire

/// `tokenet call`, `list` and `describe` against a server whose reflection answers what it likes: what the commands
/// print of its answers is bounded and masked where it goes into a message, and one line per name where it is listed.
@Suite(.timeLimit(.minutes(3))) struct HostileReflectionTests {
    @Test func aTypeNameFromThePeerIsCutAndTheMethodMasked() async throws {
        let typeName = "evil.v1.Request" + String(repeating: "x", count: 5_000) + "\u{1B}[2J"
        var router = RPCRouter()
        router.unary(ReflectionV1.Reflection.describeSymbol) { request, _ in
            let method = ReflectionV1.MethodDescription(
                name: "M", path: request.symbol, requestType: typeName, responseType: typeName)
            return ReflectionV1.DescribeSymbolResponse(
                kind: .method, name: request.symbol,
                service: ReflectionV1.ServiceDescription(name: "x.Y", methods: [method]))
        }
        let result = try await runTokenet(servedBy: router) { address in
            ["call", address, "x.Y/4761000010000009", "--plaintext", "--deadline", "20s"]
        }
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tokenet: /x.Y/************0009 uses evil.v1.Requestxxx"), "\(result.stderr)")
        #expect(result.stderr.contains("... (5019 characters, the last 3995 cut)"), "\(result.stderr)")
        #expect(!result.stderr.contains("0000"), "\(result.stderr)")
        #expect(result.stderr.utf8.count < 1_300, "\(result.stderr.utf8.count) bytes")
    }

    /// A line break in a name the server lists would print a line of its own, a service or a field the server never
    /// listed as one; an escape sequence would act on the terminal.
    @Test func namesFromThePeerAreListedOneLineEach() async throws {
        let service = "x.Y\nx.Injected"
        var router = RPCRouter()
        router.unary(ReflectionV1.Reflection.listServices) { _, _ in
            ReflectionV1.ListServicesResponse(services: [service, "a.B\u{1B}[2J", "4111111111111111.Svc"])
        }
        router.unary(ReflectionV1.Reflection.describeSymbol) { request, _ in
            var field = ReflectionV1.FieldDescription()
            field.name = "f;\n}\nmessage x.Fake {"
            field.jsonName = field.name
            field.type = "string"
            field.number = 1
            field.comment = "first\n}\nmessage x.Fake {\u{1B}[2J"
            return ReflectionV1.DescribeSymbolResponse(
                kind: .message, name: request.symbol,
                messages: [ReflectionV1.MessageDescription(name: "x.M", fields: [field], comment: "Made up.\n\nTwo.")])
        }
        let listed = try await runTokenet(servedBy: router) { address in
            ["list", address, "--plaintext", "--deadline", "20s"]
        }
        #expect(listed.status == 0, "\(listed.stderr)")
        // A card number in a name is masked, as in the node's error messages.
        #expect(listed.stdout == "x.Y\\u{A}x.Injected\na.B\\u{1B}[2J\n************1111.Svc\n")
        let described = try await runTokenet(servedBy: router) { address in
            ["describe", address, "x.M", "--plaintext", "--deadline", "20s"]
        }
        #expect(described.status == 0, "\(described.stderr)")
        // A comment's lines each start with `//`: one cannot close the message or start another.
        #expect(
            described.stdout
                == "x.M is a message:\n\n// Made up.\n//\n// Two.\nmessage x.M {\n  // first\n  // }\n"
                + "  // message x.Fake {\\u{1B}[2J\n  string f;\\u{A}}\\u{A}message x.Fake { = 1;\n}\n")
    }

    /// A bidirectional override makes a name read backwards from where it turns, and a zero-width space makes two
    /// names that print alike differ: the listing shows both as escapes, so that what is read is what is called.
    @Test func invisibleCharactersInListedNamesAreEscaped() async throws {
        var router = RPCRouter()
        router.unary(ReflectionV1.Reflection.listServices) { _, _ in
            ReflectionV1.ListServicesResponse(services: ["x.\u{202E}ecivreS", "x.Pay\u{200B}ment", "x.Line\u{2028}Two"])
        }
        let listed = try await runTokenet(servedBy: router) { address in
            ["list", address, "--plaintext", "--deadline", "20s"]
        }
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout == "x.\\u{202E}ecivreS\nx.Pay\\u{200B}ment\nx.Line\\u{2028}Two\n")
    }

    /// A server that keeps the connection up but never answers a reflection lookup ends `list` without `--deadline`
    /// after `InspectSession.lookupTimeout` (30 s), naming the lookup; the command used to wait for good.
    @Test func aLookupThatIsNeverAnsweredEndsTheCommand() async throws {
        var router = RPCRouter()
        router.unary(ReflectionV1.Reflection.listServices) { _, _ in
            try await Task.sleep(for: .seconds(600))
            return ReflectionV1.ListServicesResponse(services: [])
        }
        let started = ContinuousClock.now
        let result = try await runTokenet(servedBy: router) { address in ["list", address, "--plaintext"] }
        #expect(result.status == 64 + 4, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix("ERROR: DEADLINE_EXCEEDED: 127.0.0.1:")
                && result.stderr.hasSuffix(
                    " did not answer a reflection lookup within 30 s; give --deadline to wait longer\n"),
            "\(result.stderr)")
        // The message names the 30 s limit; this bound only catches a command that waited for good. A full suite on
        // a loaded machine once took 57 s over the whole command (start-up and the server's own included).
        #expect(ContinuousClock.now - started < .seconds(120))
    }
}
