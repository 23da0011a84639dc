import Foundation
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A well-formed frame that holds a value Tokenet cannot read (a string with a NUL character) refuses only its
/// call: the frame decoder skips it and names its stream, and the connection's state machine answers that call.
@Suite struct UnreadableFrameTests {
    typealias Machine = ConnectionStateMachine
    typealias Tests = ConnectionStateMachineTests

    static let reason = "string field \"tokenet.wire.v1.CallStart.method\" holds a NUL character"

    @Test func aServerRefusesANewCallWithInvalidArgument() {
        var machine = Tests.server()
        let status = WireV1.Status(code: .invalidArgument, message: Self.reason)
        #expect(
            machine.receiveUnreadable(streamID: 3, reason: Self.reason) == [
                .write(Tests.frame(3, .status(status))), .refusedCall(streamID: 3, start: nil, status),
            ])
        #expect(machine.state == .active)
        // The id counts as used: a later start on it is out of order, a higher one opens normally.
        #expect(Tests.goawayCode(machine.receive(Tests.frame(3, .callStart(Tests.start)))) == .protocolError)
        var fresh = Tests.server()
        _ = fresh.receiveUnreadable(streamID: 3, reason: Self.reason)
        #expect(
            fresh.receive(Tests.frame(5, .callStart(Tests.start))) == [.startHandler(streamID: 5, Tests.start)])
    }

    @Test func aServerEndsAnOpenCallAndKeepsTheOthers() {
        var machine = Tests.server()
        _ = machine.receive(Tests.frame(1, .callStart(Tests.start)))
        _ = machine.receive(Tests.frame(3, .callStart(Tests.start)))
        let status = WireV1.Status(code: .invalidArgument, message: Self.reason)
        #expect(
            machine.receiveUnreadable(streamID: 1, reason: Self.reason) == [
                .cancelHandler(streamID: 1), .write(Tests.frame(1, .status(status))),
            ])
        #expect(machine.hasOpenCalls)
        #expect(machine.state == .active)
    }

    @Test func aServerIgnoresOneForACallAlreadyOverOrAnEvenID() {
        var machine = Tests.server()
        _ = machine.receive(Tests.frame(1, .callStart(Tests.start)))
        _ = machine.receive(Tests.frame(1, .cancel(WireV1.Cancel())))
        #expect(machine.receiveUnreadable(streamID: 1, reason: Self.reason) == [])
        #expect(machine.receiveUnreadable(streamID: 4, reason: Self.reason) == [])
        #expect(machine.state == .active)
        // Another frame than a call_start on an id with no call is ignored, as a readable one would be: a cancel
        // whose reason is not UTF-8 was answered with a status for a call that never was.
        #expect(machine.receiveUnreadable(streamID: 7, reason: Self.reason, opensCall: false) == [])
        #expect(
            machine.receive(Tests.frame(7, .callStart(Tests.start))) == [.startHandler(streamID: 7, Tests.start)])
    }

    @Test func aClientCancelsAndFailsItsCall() throws {
        var machine = Tests.client()
        let (id, _) = try machine.openCall(Tests.start)
        let message = "the server sent a frame this client cannot read: \(Self.reason)"
        #expect(
            machine.receiveUnreadable(streamID: id, reason: Self.reason) == [
                .write(Tests.frame(id, .cancel(WireV1.Cancel(reason: message)))),
                .failCall(streamID: id, code: .internal, message: message),
            ])
        #expect(machine.receiveUnreadable(streamID: id + 2, reason: Self.reason) == [])
        #expect(machine.state == .active)
    }

    @Test func beforeTheHelloItIsAConnectionError() {
        var machine = Machine(role: .server)
        _ = machine.start()
        #expect(Tests.goawayCode(machine.receiveUnreadable(streamID: 1, reason: Self.reason)) == .protocolError)
        #expect(machine.state == .closed)
    }

    @Test func aDrainingServerClosesOnceTheRefusedCallWasTheLast() {
        var machine = Tests.server()
        _ = machine.receive(Tests.frame(1, .callStart(Tests.start)))
        _ = machine.beginShutdown()
        let actions = machine.receiveUnreadable(streamID: 1, reason: Self.reason)
        #expect(actions.last == .closeConnection(error: nil))
        #expect(machine.state == .closed)
    }
}

/// A call_start larger than the decoder reads (`FrameFormat.maximumCallStartSize`) refuses its call with
/// RESOURCE_EXHAUSTED, unread; the connection and the calls after it carry on.
@Suite struct OversizedCallStartTests {
    @Test func itsCallIsRefusedAndTheNextIsAnswered() async throws {
        let server = RPCServer(router: InMemoryCallTests.echoRouter)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(
            client: PeerIdentity(role: .wallet, nodeID: "wallet-1"), server: nil)
        let serving = Task { await server.serve(serverEnd) }
        let encoder = FrameEncoder()
        var bytes: [UInt8] = []
        try encoder.encode(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &bytes)
        let entries = [WireV1.MetadataEntry](repeating: WireV1.MetadataEntry(), count: 600_000)
        let oversized = WireV1.CallStart(method: TestingV1.Echo.unary.path, metadata: entries)
        try encoder.encode(WireV1.Frame(streamID: 1, kind: .callStart(oversized)), into: &bytes)
        for frame in [
            WireV1.Frame(streamID: 3, kind: .callStart(WireV1.CallStart(method: TestingV1.Echo.unary.path))),
            WireV1.Frame(streamID: 3, kind: .message(WireV1.Message())),
            WireV1.Frame(streamID: 3, kind: .halfClose(WireV1.HalfClose())),
        ] {
            try encoder.encode(frame, into: &bytes)
        }
        try await clientEnd.write(bytes)
        var decoder = FrameDecoder()
        var statuses: [UInt32: WireV1.Status] = [:]
        while statuses.count < 2, let chunk = try await clientEnd.read() {
            decoder.feed(chunk)
            while let frame = try decoder.nextFrame() {
                if case .status(let status) = frame.kind { statuses[frame.streamID] = status }
            }
        }
        #expect(statuses[1]?.code == .resourceExhausted, "\(String(describing: statuses[1]))")
        #expect(statuses[1]?.message.contains("may take at most 65536 bytes") == true)
        #expect(statuses[3]?.code == .ok)
        await clientEnd.close()
        serving.cancel()
    }
}
