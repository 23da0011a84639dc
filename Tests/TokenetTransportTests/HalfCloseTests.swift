import Testing

@testable import TokenetTransport

/// A plaintext connection that carries a TCP half-close (`PlainConnection.Options.halfClose`), as the fault proxy
/// needs: the peer's end of stream ends the reading only, and this side ends its own with `shutdownWrite`.
@Suite(.timeLimit(.minutes(5))) struct HalfCloseTests {
    typealias Machine = ConnectionStateMachine
    let limits = Machine.Limits(outboundHighWater: 100, inboundHighWater: 50)

    func openMachine() -> Machine {
        var machine = Machine(phase: .handshaking, limits: limits, halfClose: true)
        _ = machine.start()
        _ = machine.handshakeCompleted()
        return machine
    }

    /// The peer's end finishes the reader and leaves writes open; this side's end waits for what is buffered, and
    /// with both ends done the socket closes.
    @Test func thePeersEndLeavesWritesOpenUntilThisSideEndsToo() {
        var machine = openMachine()
        #expect(machine.readRequested() == [])
        #expect(machine.peerClosed() == [.setInterest(.none), .finishReader])
        #expect(machine.phase == .open)
        #expect(machine.writeRequested() == [.admitWrites])
        #expect(machine.outboundChanged(buffered: 10, writersWaiting: false) == [.setInterest(.writeOnly)])
        #expect(machine.shutdownWriteRequested() == [])
        // A write after this side's end is refused alone: the ones queued before it still go out.
        #expect(machine.writeRequested() == [.refuseNewestWriter(Machine.closedLocally)])
        #expect(machine.outboundChanged(buffered: 0, writersWaiting: false) == [.shutdownSocketWrite, .closeSocket])
        #expect(machine.phase == .closed)
    }

    /// Another end of file after the peer's comes from a wake-up for an error or a hang-up (the peer reset the
    /// connection after closing it), which epoll reports on every pass: the connection fails. Taken as the first
    /// was, it changed nothing, and the event loop spun.
    @Test func anEndOfFileAfterThePeersEndFailsTheConnection() {
        var machine = openMachine()
        #expect(machine.ciphertextArrived(endOfFile: true) == [.decrypt])
        #expect(machine.peerClosed() == [.setInterest(.none)])
        #expect(machine.ciphertextArrived(endOfFile: true) == [.fail(Machine.closedByPeer)])
        #expect(machine.phase == .closed)
    }

    /// This side's end goes at once with nothing buffered, and reading goes on until the peer's end.
    @Test func thisSidesEndLeavesReadingOpenUntilThePeersEnd() {
        var machine = openMachine()
        #expect(machine.shutdownWriteRequested() == [.shutdownSocketWrite])
        #expect(machine.plaintextBuffered(total: 5) == [])
        #expect(machine.readRequested() == [.deliverToReader])
        #expect(machine.peerClosed() == [.closeSocket])
        #expect(machine.readRequested() == [.finishReader])
    }

    /// Over loopback: a client sends and shuts down its writes; the server reads to the end, then answers and
    /// closes, and the client reads the answer and the end.
    @Test func anAnswerAfterThePeersEndReachesIt() async throws {
        let loop = try EventLoop(name: "test-half-close")
        defer { loop.shutdown() }
        let halfClosing = PlainConnection.Options(halfClose: true)
        let listener = try await PlainListener.bind(on: loop, options: halfClosing)
        async let accepted = listener.connections.first { _ in true }
        let client = try await PlainConnection.connect(
            host: "127.0.0.1", port: listener.port, on: loop, options: halfClosing)
        let server = try #require(await accepted)
        try await client.write(Array("question".utf8))
        await client.shutdownWrite()
        // A second end has nothing to wait for: it waited until the connection was torn down.
        await client.shutdownWrite()
        // A write after the end is refused.
        await #expect(throws: TransportError.self) { try await client.write(Array("late".utf8)) }
        var asked: [UInt8] = []
        while let bytes = try await server.read() { asked += bytes }
        #expect(asked == Array("question".utf8))
        try await server.write(Array("answer".utf8))
        await server.close()
        var answer: [UInt8] = []
        while let bytes = try await client.read() { answer += bytes }
        #expect(answer == Array("answer".utf8))
        await client.close()
        await listener.close()
    }
}
