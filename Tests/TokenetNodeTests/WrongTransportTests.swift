import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

/// `--plaintext` given for a node that speaks TLS fails as the node not reached, exit status 1, as the help says of a
/// node that cannot be reached and as the opposite mistake (TLS to a plaintext node, "it does not speak TLS") fails:
/// the node hangs up before it greets, and that came out as a call's UNAVAILABLE, with status 78.
@Suite(.timeLimit(.minutes(3))) struct WrongTransportTests {
    @Test(arguments: [
        ["call", "tokenet.health.v1.Health/Check"], ["list"], ["describe", "tokenet.health.v1.Health"],
    ])
    func plaintextToATLSNodeIsANodeNotReached(arguments: [String]) async throws {
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws in HealthV1.HealthCheckResponse() }
        ReflectionService(router: router).register(on: &router)
        var address = ""
        let result = try await runTokenet(servedOverTLSBy: router) {
            address = $0
            return [arguments[0], $0] + arguments.dropFirst() + ["--plaintext", "--deadline", "20s"]
        }
        #expect(result.status == 1, "\(result.stderr)")
        // The loss is worded "connection lost" or "the connection is closed" depending on which end of the
        // connection notices first, and as a close or a reset depending on whether the node's TCP stack had the
        // unread bytes of the plaintext hello when it closed (a reset then: "Connection reset by peer").
        #expect(result.stderr.hasPrefix("tokenet: cannot connect to \(address): "), "\(result.stderr)")
        #expect(
            result.stderr.hasSuffix(
                "the peer closed the connection before its hello (if the peer uses TLS, connect without --plaintext)\n")
                || result.stderr.hasSuffix(
                    "Connection reset by peer (errno 104) before its hello (if the peer uses TLS, connect without "
                        + "--plaintext)\n"),
            "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}

/// An address where something that is not a Tokenet node answers fails as a node not reached, exit status 1, with
/// what it did: the exit status of a call's UNAVAILABLE (78) said the node was reached and then lost.
@Suite(.timeLimit(.minutes(3))) struct NotATokenetNodeTests {
    /// A server that answers the hello with bytes that are not a `Frame` sent no hello; one whose hello speaks a
    /// protocol version the CLI does not sent one, which is named as refused (it was said to have sent none).
    @Test(arguments: [
        (
            [0, 0, 0, 5] + Array("hello".utf8),
            [": it sent no Tokenet hello: ", "the bytes are not a valid tokenet.wire.v1.Frame message"]
        ),
        (
            try FrameEncoder().encode(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 0)))),
            [": its Tokenet hello could not be accepted: ", "protocol version 0 is not supported"]
        ),
    ])
    func aServerAnsweringWithoutAGoodHello(answer bytes: [UInt8], said fragments: [String]) async throws {
        let answer: @Sendable (PlainConnection) async throws -> Void = { connection in
            _ = try await connection.read()
            try await connection.write(bytes)
            _ = try? await connection.read()
        }
        let result = try await runAgainstNonNode(answeredBy: answer) {
            ["list", $0, "--plaintext", "--deadline", "20s"]
        }
        #expect(result.status == 1, "\(result.stderr)")
        for fragment in fragments { #expect(result.stderr.contains(fragment), "\(result.stderr)") }
    }

    /// A server that closes every connection at once, as a node over its `--address-handshakes` does.
    @Test func aCloseDuringTheTLSHandshake() async throws {
        let pki = DevelopmentPKI.shared
        let result = try await runAgainstNonNode(
            answeredBy: { _ in },
            {
                [
                    "list", $0, "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                    pki.path("operator.key"), "--deadline", "20s",
                ]
            })
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains(": it closed the connection during the TLS handshake; check that "),
            "\(result.stderr)")
    }

    /// Runs `tokenet` against a plaintext listener whose connections `answer` handles, then closes.
    private func runAgainstNonNode(
        answeredBy answer: @escaping @Sendable (PlainConnection) async throws -> Void,
        _ arguments: (String) -> [String]
    ) async throws -> ProcessResult {
        let loop = try EventLoop(name: "not-a-node")
        let listener = try await PlainListener.bind(on: loop)
        // On the listener's loop, as `InProcessServer` serves: a loaded suite's pool answered too late, and the
        // command reported a handshake that timed out instead of the close.
        let serving = Task(executorPreference: loop) {
            await withDiscardingTaskGroup { group in
                for await connection in listener.connections {
                    group.addTask {
                        try? await answer(connection)
                        await connection.close()
                    }
                }
            }
        }
        let command = arguments("127.0.0.1:\(listener.port)")
        let result: Result<ProcessResult, any Error>
        do {
            result = .success(try await offThePool { try TokenetNodeTests.runTokenet(command) })
        } catch {
            result = .failure(error)
        }
        await listener.close()
        serving.cancel()
        loop.shutdown()
        return try result.get()
    }
}
