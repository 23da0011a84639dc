import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// A peer that connects to a node and never sends its hello is let go after `--hello-timeout`, with a goaway that
/// says why, instead of holding the connection until keepalive finds it (50 s by default); a peer that greets at
/// once keeps its connection past the same limit, and the node serves on.
@Suite struct SilentPeerTests {
    @Test(.timeLimit(.minutes(3))) func aPeerThatNeverSaysHelloIsLetGoAndOthersAreServed() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, address) = try await LaunchedProcess.plaintextTSPNode(in: scratch, ["--hello-timeout", "3"])
        defer { node.process.send(SIGTERM) }
        let loop = try EventLoop(name: "test-silent-peer")
        defer { loop.shutdown() }
        // The test runs on its connections' loop thread: a full suite keeps the shared pool busy, and a greeting
        // that waited there for a turn could reach the node after its hello timeout, which is the node's right.
        try await Task(executorPreference: loop) { try await Self.greetOneAndStaySilentOnTheOther(address, loop) }
            .value

        node.process.send(SIGTERM)
        let exit = try await node.waitForExit()
        #expect(exit.status == 0)
        #expect(exit.stderr.contains("no hello from the peer within 3.0 seconds"), "\(exit.stderr)")
    }

    private static func greetOneAndStaySilentOnTheOther(_ address: HostPort, _ loop: EventLoop) async throws {
        let silent = try await RawFrameConnection(to: address, on: loop)
        let greeting = try await RawFrameConnection(to: address, on: loop)
        try await greeting.send(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))))

        let goaway = try await silent.next { if case .goaway = $0.kind { true } else { false } }
        guard case .goaway(let frame)? = goaway?.kind else {
            Issue.record("the silent peer got no goaway")
            return
        }
        #expect(frame.code == .protocolError)
        #expect(frame.reason.contains("no hello from the peer within 3.0 seconds"), "\(frame.reason)")
        #expect(try await silent.next { _ in false } == nil, "the node kept the silent peer's connection open")

        // The peer that greeted is past the same limit by now, and its ping is answered. (The limit leaves a loaded
        // machine time to start the node's reading of a new connection: the first version of this test, at half a
        // second, saw the greeting peer let go too while the whole suite ran.)
        try await Task.sleep(for: .seconds(1))
        try await greeting.send(WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 7))))
        let pong = try await greeting.next { if case .pong = $0.kind { true } else { false } }
        guard case .pong(let answer)? = pong?.kind else {
            Issue.record("the peer that greeted lost its connection")
            return
        }
        #expect(answer.payload == 7)
        await greeting.close()
        await silent.close()
    }
}
