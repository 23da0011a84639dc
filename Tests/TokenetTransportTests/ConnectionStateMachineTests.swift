import Testing

@testable import TokenetTransport

@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine
    let limits = Machine.Limits(outboundHighWater: 100, inboundHighWater: 50)

    /// A machine that is open with nothing buffered.
    func openMachine() -> Machine {
        var machine = Machine(phase: .handshaking, limits: limits)
        _ = machine.start()
        _ = machine.handshakeCompleted()
        return machine
    }

    @Test func clientConnectsThenHandshakes() {
        var machine = Machine(phase: .connecting, limits: limits)
        #expect(machine.start() == [.setInterest(.writeOnly)])
        #expect(machine.tcpConnected() == [.setInterest(.readOnly), .driveHandshake])
        #expect(
            machine.outboundChanged(buffered: 30, writersWaiting: false)
                == [.setInterest(Interest(read: true, write: true))])
        #expect(machine.ciphertextArrived() == [.driveHandshake])
        #expect(machine.outboundChanged(buffered: 0, writersWaiting: false) == [.setInterest(.readOnly)])
        #expect(machine.handshakeCompleted() == [.reportEstablished, .decrypt])
        #expect(machine.phase == .open)
        #expect(machine.ciphertextArrived() == [.decrypt])
    }

    @Test func acceptedSocketStartsItsHandshakeOnceRegistered() {
        var accepted = Machine(phase: .handshaking, limits: limits)
        #expect(accepted.start() == [.setInterest(.readOnly)])
        #expect(accepted.registered() == [.driveHandshake])
        // A pass-through engine completes at once; data that came with the connection is read right away.
        #expect(accepted.handshakeCompleted() == [.reportEstablished, .decrypt])
        var connecting = Machine(phase: .connecting, limits: limits)
        _ = connecting.start()
        #expect(connecting.registered() == [])
    }

    @Test func readerWaitsForDataAndGetsItOnArrival() {
        var machine = openMachine()
        #expect(machine.readRequested() == [])
        #expect(machine.plaintextBuffered(total: 0) == [])
        #expect(machine.plaintextBuffered(total: 10) == [.deliverToReader])
        #expect(machine.readRequested() == [])
    }

    @Test func cancelledReaderDoesNotReceiveLaterData() {
        var machine = openMachine()
        _ = machine.readRequested()
        #expect(machine.readCancelled() == [])
        #expect(machine.plaintextBuffered(total: 10) == [])
        #expect(machine.readRequested() == [.deliverToReader])
    }

    @Test func bufferedDataIsDeliveredImmediately() {
        var machine = openMachine()
        #expect(machine.plaintextBuffered(total: 10) == [])
        #expect(machine.readRequested() == [.deliverToReader])
    }

    @Test func fullInboundBufferStopsReadingTheSocketUntilTheReaderCatchesUp() {
        var machine = openMachine()
        #expect(machine.plaintextBuffered(total: 60) == [.setInterest(.none)])
        #expect(machine.readRequested() == [.setInterest(.readOnly), .deliverToReader])
    }

    @Test func writersAreAdmittedOnlyBelowTheHighWaterMark() {
        var machine = openMachine()
        #expect(machine.writeRequested() == [.admitWrites])
        // The driver admitted until the buffer passed the mark; a writer is still waiting.
        #expect(
            machine.outboundChanged(buffered: 120, writersWaiting: true)
                == [.setInterest(Interest(read: true, write: true))])
        #expect(machine.writeRequested() == [])
        #expect(machine.outboundChanged(buffered: 100, writersWaiting: true) == [])
        #expect(machine.outboundChanged(buffered: 40, writersWaiting: true) == [.admitWrites])
        #expect(machine.outboundChanged(buffered: 0, writersWaiting: false) == [.setInterest(.readOnly)])
    }

    @Test func localCloseFailsWaitersSendsCloseNotifyAndClosesOnceFlushed() {
        var machine = openMachine()
        _ = machine.readRequested()
        _ = machine.writeRequested()
        _ = machine.outboundChanged(buffered: 150, writersWaiting: true)
        #expect(
            machine.closeRequested() == [
                .setInterest(.writeOnly), .failReader(Machine.closedLocally), .failWriters(Machine.closedLocally),
                .sendCloseNotify,
            ])
        #expect(machine.outboundChanged(buffered: 20, writersWaiting: false) == [])
        #expect(machine.outboundChanged(buffered: 0, writersWaiting: false) == [.closeSocket])
        #expect(machine.phase == .closed)
        #expect(machine.closeRequested() == [])
        #expect(machine.writeRequested() == [.failWriters(Machine.closedLocally)])
    }

    @Test func peerCloseNotifyEndsTheReaderAfterBufferedData() {
        var machine = openMachine()
        _ = machine.plaintextBuffered(total: 5)
        #expect(machine.peerClosed() == [.setInterest(.none), .failWriters(Machine.closedByPeer), .sendCloseNotify])
        #expect(machine.readRequested() == [.deliverToReader])
        #expect(machine.readRequested() == [.finishReader])
        #expect(machine.outboundChanged(buffered: 0, writersWaiting: false) == [.closeSocket])
        #expect(machine.readRequested() == [.finishReader])
        // The owner may write before it has read the end of the stream: the write names the peer's close.
        #expect(machine.writeRequested() == [.failWriters(Machine.closedByPeer)])
    }

    @Test func waitingReaderIsFinishedByPeerClose() {
        var machine = openMachine()
        _ = machine.readRequested()
        #expect(machine.peerClosed().first(where: { $0 == .finishReader }) != nil)
    }

    @Test func failureIsTerminalAndRepeatedToLaterRequests() {
        var machine = openMachine()
        let error = TransportError(.unexpectedEOF, "cut")
        #expect(machine.failed(error) == [.fail(error)])
        #expect(machine.failed(TransportError(.io, "again")) == [])
        #expect(machine.readRequested() == [.failReader(error)])
        #expect(machine.writeRequested() == [.failWriters(error)])
        #expect(machine.ciphertextArrived() == [])
    }

    @Test func handshakeDeadlineFailsOnlyUnestablishedConnections() {
        var handshaking = Machine(phase: .handshaking, limits: limits)
        _ = handshaking.start()
        #expect(handshaking.timedOut() == [.fail(.handshakeTimedOut)])
        var connecting = Machine(phase: .connecting, limits: limits)
        _ = connecting.start()
        #expect(connecting.timedOut() == [.fail(.connectTimedOut)])
        var open = openMachine()
        #expect(open.timedOut() == [])
    }

    @Test func anAbandonedAttemptFailsOnlyWhileUnestablished() {
        let cancelled = TransportError(.cancelled, "the connection attempt was cancelled")
        for phase in [Machine.Phase.connecting, .handshaking] {
            var machine = Machine(phase: phase, limits: limits)
            _ = machine.start()
            #expect(machine.abandoned() == [.fail(cancelled)])
        }
        var open = openMachine()
        #expect(open.abandoned() == [])
    }

    @Test func closeBeforeHandshakeFails() {
        var machine = Machine(phase: .connecting, limits: limits)
        _ = machine.start()
        let actions = machine.closeRequested()
        #expect(actions.count == 1)
        guard case .fail(let error) = actions.first else {
            Issue.record("expected .fail, got \(actions)")
            return
        }
        #expect(error.code == .connectionClosed)
    }

    @Test func writeBeforeHandshakeIsRefused() {
        var machine = Machine(phase: .handshaking, limits: limits)
        _ = machine.start()
        guard case .failWriters(let error) = machine.writeRequested().first else {
            Issue.record("expected .failWriters")
            return
        }
        #expect(error.code == .invalidState)
    }

    @Test func eofWhileClosingClosesTheSocket() {
        var machine = openMachine()
        _ = machine.outboundChanged(buffered: 50, writersWaiting: false)
        _ = machine.closeRequested()
        #expect(machine.ciphertextArrived(endOfFile: true) == [.closeSocket])
    }
}
