import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// A second SIGTERM or SIGINT while a node drains is noted in the log and changes nothing: the drain is already
/// bounded by --drain-timeout, and cutting it short would end calls that are about to finish.
@Suite struct SecondStopSignalTests {
    @Test(.timeLimit(.minutes(3)), arguments: [SIGTERM, SIGINT])
    func aSecondSignalDuringTheDrainIsLoggedAndTheDrainGoesOn(second: Int32) async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, address) = try await LaunchedProcess.plaintextTSPNode(in: scratch, ["--drain-timeout", "60"])
        defer { node.process.send(SIGTERM) }

        // A call whose request never comes holds the drain for its whole period.
        let loop = try EventLoop(name: "test-second-signal")
        defer { loop.shutdown() }
        let raw = try await RawFrameConnection(to: address, on: loop)
        try await raw.send(
            WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))),
            WireV1.Frame(streamID: 1, kind: .callStart(WireV1.CallStart(method: HealthV1.Health.check.path))),
            WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 7))))
        // The node has the call once it answers the ping sent after it.
        let answered = try await raw.next { if case .pong = $0.kind { true } else { false } }
        #expect(answered != nil)

        node.process.send(SIGTERM)
        let toldToGo = try await raw.next { if case .goaway = $0.kind { true } else { false } }
        #expect(toldToGo != nil)
        node.process.send(second)
        // The drain may last 60 s: however long this test is held back on a loaded machine, the node is still
        // draining when the second signal comes, and the test ends the drain itself by hanging up.
        let name = StopSignalWatcher.name(of: second)
        let logged = try await Self.eventually {
            (try? String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8))?
                .contains("already stopping signal=\(name)") == true
        }
        #expect(logged, "no 'already stopping' line after the second signal")

        // The call is still held: the connection answers a ping, and no end of stream 1 comes before the pong.
        try await raw.send(WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 8))))
        var callEndedEarly = false
        let stillAnswering = try await raw.next { frame in
            if frame.streamID == 1 { callEndedEarly = true }
            if case .pong = frame.kind { return true } else { return false }
        }
        #expect(stillAnswering != nil)
        #expect(!callEndedEarly, "the second signal ended the call the drain was waiting for")

        await raw.close()
        let result = try await node.waitForExit()
        #expect(result.reason == .exit && result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("stopped"), "\(result.stderr)")
        #expect(!result.stderr.contains("drain period over"), "\(result.stderr)")
    }

    /// Whether `condition` holds within a minute, checked every 20 ms.
    static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while try !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
