import Foundation
import Testing
import TokenetWire

@testable import TokenetRPC

/// The connection state machine's answers to a peer that abuses the connection, as event → action lists.
@Suite struct PeerAbuseStateMachineTests {
    typealias Tests = ConnectionStateMachineTests

    @Test func aPeerThatReadsNothingGetsAGoawayAndItsCallsEnd() {
        var machine = Tests.server()
        _ = machine.receive(Tests.frame(1, .callStart(Tests.start)))
        let reason = "the peer keeps sending but reads nothing: 9000000 bytes of frames wait for it"
        let actions = machine.peerStoppedReading(queuedBytes: 9_000_000)
        #expect(Tests.goawayCode(actions) == .protocolError)
        #expect(
            actions.contains(
                .write(Tests.frame(0, .goaway(WireV1.GoAway(lastStreamID: 1, code: .protocolError, reason: reason))))))
        #expect(actions.contains(.cancelHandler(streamID: 1)))
        #expect(actions.last == .closeConnection(error: reason))
        #expect(machine.state == .closed)
        #expect(machine.peerStoppedReading(queuedBytes: 1) == [])
    }

    @Test func aFrameThatNeverCompletesEndsTheConnection() {
        var machine = Tests.server()
        let actions = machine.frameTimedOut(after: "50.0 seconds")
        #expect(Tests.goawayCode(actions) == .protocolError)
        #expect(
            actions.last == .closeConnection(error: "a frame that began to arrive 50.0 seconds ago is still incomplete")
        )
    }

    /// A goaway reason of megabytes is cut short before it becomes the text of failed calls and of log lines.
    @Test func aLongGoawayReasonIsCutShort() throws {
        var machine = Tests.client()
        let (id, _) = try machine.openCall(Tests.start)
        let reason = String(repeating: "R", count: 3_000_000)
        let actions = machine.receive(
            Tests.frame(0, .goaway(WireV1.GoAway(lastStreamID: id, code: .protocolError, reason: reason))))
        let shown = String(repeating: "R", count: 256) + "... (3000000 bytes)"
        #expect(
            actions.contains(
                .failCall(streamID: id, code: .unavailable, message: "the peer closed the connection: \(shown)")))
        #expect(actions.last == .closeConnection(error: shown))
    }
}
