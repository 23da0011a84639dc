import Foundation
import Testing
import TokenetRPC
import TokenetWire

/// How many requests `tokenet call -d @` sends a client-streaming method, against an in-process plaintext server.
@Suite(.timeLimit(.minutes(3))) struct InspectStreamingCallTests {
    /// Serves Echo's ClientStream, answering with the number of requests it received in `f_int32`, and Unary (no
    /// reflection, so the CLI uses the types it knows).
    private static func call(_ method: String, stdin: String) async throws -> ProcessResult {
        var router = RPCRouter()
        router.clientStreaming(TestingV1.Echo.clientStream) { requests, _ in
            var count: Int32 = 0
            for try await _ in requests { count += 1 }
            return TestingV1.Scalars(fInt32: count)
        }
        router.unary(TestingV1.Echo.unary) { request, _ in request }
        return try await runTokenet(servedBy: router, stdin: stdin) { address in
            ["call", address, "tokenet.testing.v1.Echo/\(method)", "-d", "@", "--plaintext", "--deadline", "20s"]
        }
    }

    @Test func eachObjectOnStandardInputIsOneRequest() async throws {
        let result = try await Self.call("ClientStream", stdin: "{\"fInt32\": 7}\n{} {\"f_string\": \"x\"}\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{\n  \"fInt32\": 3\n}\n")
    }

    /// An empty standard input is no request, as in grpcurl; it used to be refused, so a client-streaming method
    /// could not be sent none.
    @Test(arguments: ["", " \n"])
    func anEmptyStandardInputSendsAClientStreamingMethodNoRequest(stdin: String) async throws {
        let result = try await Self.call("ClientStream", stdin: stdin)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{}\n")
    }

    /// A request file an editor saved with a UTF-8 byte order mark (`-d @ < request.json`) is read without it, as the
    /// nodes read their config files: it was refused as "unexpected byte 239 at byte 0", for a character the editor
    /// does not show.
    @Test func aByteOrderMarkBeforeTheRequestIsSkipped() async throws {
        let result = try await Self.call("Unary", stdin: "\u{FEFF}{\"fInt32\": 7}\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{\n  \"fInt32\": 7\n}\n")
    }

    /// Only one, and only at the start: anywhere else it is a character no JSON text may hold there.
    @Test(arguments: ["\u{FEFF}\u{FEFF}{}", "{} \u{FEFF}{}"])
    func aByteOrderMarkElsewhereIsRefused(stdin: String) async throws {
        let result = try await Self.call("ClientStream", stdin: stdin)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func anEmptyStandardInputIsRefusedForAUnaryMethod() async throws {
        let result = try await Self.call("Unary", stdin: "")
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix(
                "tokenet: call: the request JSON is empty; /tokenet.testing.v1.Echo/Unary takes one request message\n"),
            "\(result.stderr)")
    }
}
