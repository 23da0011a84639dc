import Foundation
import Testing
import TokenetRPC
import TokenetWire

/// What `tokenet call` prints for a response, against an in-process plaintext server whose Echo/Unary answers with the
/// request: proto3 JSON that any JSON reader takes, whatever the message holds.
@Suite(.timeLimit(.minutes(3))) struct InspectJSONOutputTests {
    /// Calls Echo/Unary (no reflection, so the CLI uses the types it knows) with `request`.
    private static func echo(_ request: String, _ options: [String] = []) async throws -> ProcessResult {
        var router = RPCRouter()
        router.unary(TestingV1.Echo.unary) { request, _ in request }
        return try await runTokenet(servedBy: router) { address in
            ["call", address, "tokenet.testing.v1.Echo/Unary", "-d", request, "--plaintext", "--deadline", "20s"]
                + options
        }
    }

    /// `--emit-defaults`, as grpcurl's `-emit-defaults`: the fields at their default value print too, where proto3
    /// JSON leaves them out (a `connected: false` that was missing read as if the field did not exist).
    @Test func emitDefaultsPrintsTheFieldsAtTheirDefault() async throws {
        let result = try await Self.echo(#"{"fInt32": 5}"#, ["--emit-defaults"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout == """
                {
                  "fDouble": 0,
                  "fFloat": 0,
                  "fInt32": 5,
                  "fInt64": "0",
                  "fUint32": 0,
                  "fUint64": "0",
                  "fSint32": 0,
                  "fSint64": "0",
                  "fFixed32": 0,
                  "fFixed64": "0",
                  "fSfixed32": 0,
                  "fSfixed64": "0",
                  "fBool": false,
                  "fString": "",
                  "fBytes": "",
                  "fColor": "COLOR_UNSPECIFIED"
                }

                """)
        #expect(try await Self.echo(#"{"fInt32": 5}"#).stdout == "{\n  \"fInt32\": 5\n}\n")
        let valued = try await Self.echo("{}", ["--emit-defaults=yes"])
        #expect(valued.status == 2 && valued.stderr.contains("--emit-defaults takes no value"), "\(valued.stderr)")
    }

    @Test func everyScalarTypePrintsInItsProto3Form() async throws {
        let result = try await Self.echo(
            #"{"fDouble": -0.5, "fFloat": "Infinity", "fInt32": -7, "fInt64": "-9007199254740993", "#
                + #""fUint32": 4294967295, "#
                + #""fUint64": 18446744073709551615, "fSint32": -1, "fSint64": "1", "fFixed32": 1, "fFixed64": 2, "#
                + #""fSfixed32": -3, "fSfixed64": -4, "fBool": true, "fString": "é", "fBytes": "-_8", "fColor": -3}"#)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout == """
                {
                  "fDouble": -0.5,
                  "fFloat": "Infinity",
                  "fInt32": -7,
                  "fInt64": "-9007199254740993",
                  "fUint32": 4294967295,
                  "fUint64": "18446744073709551615",
                  "fSint32": -1,
                  "fSint64": "1",
                  "fFixed32": 1,
                  "fFixed64": "2",
                  "fSfixed32": -3,
                  "fSfixed64": "-4",
                  "fBool": true,
                  "fString": "é",
                  "fBytes": "+/8=",
                  "fColor": "COLOR_BLUE"
                }

                """)
    }

    /// The C1 control characters (U+0080 to U+009F) are escaped as JSON escapes. Written out as they were, the CLI's
    /// guard against characters that act on a terminal rewrote them as `\u{85}`, which is no JSON escape: the output
    /// of a string holding one (a NEL, a CSI) was not JSON any more.
    @Test func c1ControlCharactersPrintAsJSONEscapes() async throws {
        let result = try await Self.echo(#"{"fString": "a\u0085b\u009b2Jc\u0080"}"#)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{\n  \"fString\": \"a\\u0085b\\u009b2Jc\\u0080\"\n}\n")
        let printed = try JSONValue(parsing: result.stdout)
        #expect(printed == .object([("fString", .string("a\u{85}b\u{9B}2Jc\u{80}"))]))
    }
}
