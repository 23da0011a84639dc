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
        Self.expectProtocolErrorEndingCall1(machine.peerStoppedReading(queuedBytes: 9_000_000), reason, machine)
        #expect(machine.peerStoppedReading(queuedBytes: 1) == [])
    }

    @Test func aPeerOverTheServersBudgetOfUnreadFramesGetsAGoawayAndItsCallsEnd() {
        var machine = Tests.server()
        _ = machine.receive(Tests.frame(1, .callStart(Tests.start)))
        let reason =
            "the peer keeps sending but reads too little: 2000000 bytes of frames wait for it, and this side holds "
            + "more than 134217728 bytes for peers that read nothing"
        Self.expectProtocolErrorEndingCall1(
            machine.unreadBudgetExceeded(queuedBytes: 2_000_000, limit: 134_217_728), reason, machine)
        #expect(machine.unreadBudgetExceeded(queuedBytes: 1, limit: 1) == [])
    }

    @Test func aPeerThatFloodsFramesThatDoNoWorkGetsAGoawayAndItsCallsEnd() {
        var machine = Tests.server()
        _ = machine.receive(Tests.frame(1, .callStart(Tests.start)))
        let reason =
            "the peer sent more frames that do no work (pings, pongs, empty frames) than this side allows: 1000 at "
            + "once and 100 a second after that"
        Self.expectProtocolErrorEndingCall1(
            machine.workFreeFramesExceeded(limit: "1000 at once and 100 a second after that"), reason, machine)
        #expect(machine.workFreeFramesExceeded(limit: "x") == [])
    }

    /// A server with call 1 open ends the connection for `reason`: a goaway (PROTOCOL_ERROR) naming call 1 as the
    /// last it took, the handler cancelled, the connection closed.
    private static func expectProtocolErrorEndingCall1(
        _ actions: ConnectionStateMachine.Actions, _ reason: String, _ machine: ConnectionStateMachine
    ) {
        #expect(Tests.goawayCode(actions) == .protocolError)
        #expect(
            actions.contains(
                .write(Tests.frame(0, .goaway(WireV1.GoAway(lastStreamID: 1, code: .protocolError, reason: reason))))))
        #expect(actions.contains(.cancelHandler(streamID: 1)))
        #expect(actions.last == .closeConnection(error: reason))
        #expect(machine.state == .closed)
    }

    @Test func aFrameThatNeverCompletesEndsTheConnection() {
        var machine = Tests.server()
        let actions = machine.frameTimedOut(after: "50.0 seconds")
        #expect(Tests.goawayCode(actions) == .protocolError)
        #expect(
            actions.last == .closeConnection(error: "a frame that began to arrive 50.0 seconds ago is still incomplete")
        )
    }

    /// A call the client cancelled counts until its handler returns, against an allowance of
    /// `max_concurrent_streams` such calls: a client that opens and cancels calls in a loop must not start handlers
    /// without bound, while one that cancels a call can open the next at once.
    @Test func aCancelledCallCountsUntilItsHandlerReturns() {
        var machine = Tests.server(ConnectionSettings(maxConcurrentStreams: 2))
        for id: UInt32 in [1, 3, 5, 7] {
            let started = machine.receive(Tests.frame(id, .callStart(Tests.start)))
            #expect(started == [.startHandler(streamID: id, Tests.start)])
            #expect(machine.receive(Tests.frame(id, .cancel(WireV1.Cancel()))) == [.cancelHandler(streamID: id)])
        }
        let refused = WireV1.Status(
            code: .resourceExhausted,
            message: "too many concurrent calls: the limit is 2, plus 2 calls that ended early and whose handlers are "
                + "still stopping")
        #expect(
            machine.receive(Tests.frame(9, .callStart(Tests.start))) == [
                .write(Tests.frame(9, .status(refused))), .refusedCall(streamID: 9, start: Tests.start, refused),
            ])
        // A call its client cancelled was answered nothing by this side.
        #expect(machine.handlerReturned(1) == nil)
        #expect(machine.receive(Tests.frame(11, .callStart(Tests.start))) == [.startHandler(streamID: 11, Tests.start)])
        // A handler that returned after its call ended normally frees nothing more.
        _ = machine.sendStatus(11, WireV1.Status())
        machine.handlerReturned(11)
        #expect(machine.handlersOutlivingStreams == [3, 5, 7])
    }

    /// A call this side ended while its handler ran reports, when the handler returns, the status the caller was
    /// told, for the call log (the handler saw only its cancellation); once.
    @Test func aCallEndedWhileHandledReportsItsAnswerWhenTheHandlerReturns() {
        var machine = Tests.server()
        _ = machine.receive(Tests.frame(1, .callStart(Tests.start)))
        _ = machine.receive(Tests.frame(1, .halfClose(WireV1.HalfClose())))
        let told = WireV1.Status(code: .internal, message: "message received after the end of requests")
        #expect(
            machine.receive(Tests.frame(1, .message(WireV1.Message(data: Data([1]))))) == [
                .cancelHandler(streamID: 1), .write(Tests.frame(1, .status(told))),
            ])
        #expect(machine.handlerReturned(1) == told)
        #expect(machine.handlerReturned(1) == nil)
    }

    /// Grants beyond what was sent never take the window past its initial size. Added up unchecked, 2^31 grants of
    /// 4 GiB each overflowed the window, which stopped the process; here the window shows the cap.
    @Test func grantsBeyondTheInitialWindowAreCapped() {
        var machine = ConnectionStateMachine(role: .server)
        _ = machine.start()
        _ = machine.receive(
            Tests.frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: .init(initialStreamWindow: 10)))))
        _ = machine.receive(Tests.frame(1, .callStart(Tests.start)))
        for _ in 0..<3 {
            _ = machine.receive(Tests.frame(1, .windowUpdate(WireV1.WindowUpdate(increment: UInt32.max))))
        }
        #expect(machine.directSendAllowance(1) == 10)
        #expect(machine.sendMessage(1, Data(count: 10)).count == 1)
        #expect(machine.sendMessage(1, Data(count: 1)) == [], "beyond the window: queued")
        // What was sent is granted back, and no more.
        let actions = machine.receive(Tests.frame(1, .windowUpdate(WireV1.WindowUpdate(increment: UInt32.max))))
        #expect(actions == [.write(Tests.frame(1, .message(WireV1.Message(data: Data(count: 1)))))])
        #expect(machine.directSendAllowance(1) == 9)
    }

    /// Opens call `id` and cancels it while it runs; its handler returns at once.
    private static func openAndCancel(_ id: UInt32, _ machine: inout Tests.Machine) -> Tests.Machine.Actions {
        _ = machine.receive(Tests.frame(id, .callStart(Tests.start)))
        let actions = machine.receive(Tests.frame(id, .cancel(WireV1.Cancel())))
        machine.handlerReturned(id)
        return actions
    }

    /// A peer that opens calls and cancels each one while it runs ("rapid reset") is cut off once it has cancelled
    /// more than 896 calls of a block of 1,024.
    @Test func aPeerThatCancelsNearlyEveryCallIsCutOff() {
        var machine = Tests.server()
        var id: UInt32 = 1
        for _ in 0..<896 {
            #expect(Self.openAndCancel(id, &machine) == [.cancelHandler(streamID: id)])
            id += 2
        }
        let actions = Self.openAndCancel(id, &machine)
        let reason =
            "the peer cancelled 897 of its last 897 calls while they ran, none of them near its deadline: a client that "
            + "cancels nearly every call it makes costs this side a handler each; cancel fewer calls"
        #expect(
            actions == [
                .cancelHandler(streamID: id),
                .write(
                    Tests.frame(0, .goaway(WireV1.GoAway(lastStreamID: id, code: .protocolError, reason: reason)))),
                .closeConnection(error: reason),
            ])
    }

    /// A client tells the server of a passed deadline with a cancel: a server slow enough to let every call's
    /// deadline pass does not cut its client off. The cancel comes as the deadline ends here, or a little before
    /// (the client's deadline started before the call arrived).
    @Test func cancelsOfPassedDeadlinesDoNotCount() {
        var machine = Tests.server()
        var start = Tests.start
        start.timeoutMicros = 3_000_000
        let millisecond: UInt64 = 1_000_000
        for index in 0..<2_000 {
            let id = UInt32(2 * index + 1)
            let arrived = UInt64(index) * millisecond
            _ = machine.receive(Tests.frame(id, .callStart(start)), at: arrived)
            let cancel = machine.receive(
                Tests.frame(id, .cancel(WireV1.Cancel())),
                at: arrived + (index % 2 == 0 ? 2_990 : 1_600) * millisecond)
            #expect(cancel == [.cancelHandler(streamID: id)])
            machine.handlerReturned(id)
        }
        #expect(machine.state == .active)
    }

    /// A deadline is no pass for a cancel the client chose: one that comes before half the deadline has passed
    /// counts, or any client could open and cancel calls in a loop by giving each an hour (or no time at all: the
    /// mark is at least 100 µs after the start).
    @Test(arguments: [3_600_000_000, 0, 1] as [UInt64])
    func aCancelLongBeforeTheDeadlineCounts(timeout: UInt64) {
        var machine = Tests.server()
        var start = Tests.start
        start.timeoutMicros = timeout
        let now: UInt64 = 1_000_000_000
        var id: UInt32 = 1
        for _ in 0..<896 {
            _ = machine.receive(Tests.frame(id, .callStart(start)), at: now)
            let elapsed: UInt64 = timeout > 1 ? 1_799 * 1_000_000_000 : 20_000
            _ = machine.receive(Tests.frame(id, .cancel(WireV1.Cancel())), at: now + elapsed)
            machine.handlerReturned(id)
            id += 2
        }
        #expect(machine.state == .active)
        // A deadline as good as none (2^64 µs) is no pass either, and does not overflow.
        start.timeoutMicros = .max
        _ = machine.receive(Tests.frame(id, .callStart(start)), at: now)
        let actions = machine.receive(Tests.frame(id, .cancel(WireV1.Cancel())), at: now)
        let reason =
            "the peer cancelled 897 of its last 897 calls while they ran, none of them near its deadline: a client that "
            + "cancels nearly every call it makes costs this side a handler each; cancel fewer calls"
        #expect(actions.last == .closeConnection(error: reason), "\(actions)")
    }

    /// Cancelling at most 7 calls in 8, block after block, is a client's way of working: the connection carries on.
    @Test func aPeerThatCancelsSevenCallsInEightCarriesOn() {
        var machine = Tests.server()
        var id: UInt32 = 1
        for index in 0..<(4 * 1024) {
            if index % 8 == 7 {
                _ = machine.receive(Tests.frame(id, .callStart(Tests.start)))
                _ = machine.sendStatus(id, WireV1.Status())
                machine.handlerReturned(id)
            } else {
                #expect(Self.openAndCancel(id, &machine) == [.cancelHandler(streamID: id)])
            }
            id += 2
        }
        #expect(machine.state == .active)
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
        // The close's reason, which the connection's log line shows, says whose words they are.
        #expect(actions.last == .closeConnection(error: "the peer sent goaway GO_AWAY_CODE_PROTOCOL_ERROR: \(shown)"))
    }
}
