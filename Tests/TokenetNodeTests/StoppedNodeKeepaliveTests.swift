import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// Time in which a node did not run (stopped with SIGSTOP, a debugger, a machine that stalled) is not charged to its
/// peers: a pong that arrived meanwhile waits in the socket for the event loop, and the node's timer, waking at the
/// same moment, used to overtake it and close the connection for a ping its peer had answered at once.
@Suite struct StoppedNodeKeepaliveTests {
    @Test(.timeLimit(.minutes(3))) func aPongThatArrivedWhileTheNodeWasStoppedKeepsTheConnection() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, address) = try await LaunchedProcess.plaintextTSPNode(
            in: scratch, ["--keepalive", "2", "--keepalive-timeout", "8"])
        defer {
            node.process.send(SIGCONT)
            node.process.send(SIGTERM)
        }
        let loop = try EventLoop(name: "test-stopped-node")
        defer { loop.shutdown() }
        // The test runs on its connection's loop thread: a full suite keeps the shared pool busy, and a test that
        // waited there for a turn between the node's ping and the SIGSTOP could outlast the keepalive timeout.
        try await Task(executorPreference: loop) { try await Self.stopTheNodeAfterItsPing(node, address, loop) }.value
    }

    private static func stopTheNodeAfterItsPing(
        _ node: LaunchedProcess, _ address: HostPort, _ loop: EventLoop
    ) async throws {
        let raw = try await RawFrameConnection(to: address, on: loop)
        try await raw.send(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))))

        // Two seconds of silence, and the node pings.
        let ping = try await raw.next { if case .ping = $0.kind { true } else { false } }
        guard case .ping(let payload)? = ping?.kind else {
            Issue.record("the node sent no ping")
            return
        }
        // The node stops; the answer goes at once and waits in its socket for over twice the keepalive timeout. The
        // timeout leaves a loaded machine time to stop the node before it runs out.
        node.process.send(SIGSTOP)
        try await raw.send(WireV1.Frame(streamID: 0, kind: .pong(WireV1.Pong(payload: payload.payload))))
        try await Task.sleep(for: .seconds(18))
        node.process.send(SIGCONT)

        // The connection is still there: a ping of ours is answered, and no goaway comes first.
        try await raw.send(WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 77))))
        var closedWith: String?
        let answer = try await raw.next(answeringPings: true) { frame in
            if case .goaway(let goaway) = frame.kind { closedWith = goaway.reason }
            if case .pong(let pong) = frame.kind, pong.payload == 77 { return true }
            return closedWith != nil
        }
        #expect(closedWith == nil, "the node closed the connection: \(closedWith ?? "")")
        let answered = if case .pong? = answer?.kind { true } else { false }
        #expect(answered, "no pong after the node resumed: \(String(describing: answer))")
        await raw.close()
    }
}
