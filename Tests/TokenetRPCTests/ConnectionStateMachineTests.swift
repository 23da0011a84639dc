import Foundation
import Testing
import TokenetWire

@testable import TokenetRPC

/// The connection protocol as event → action lists (Protos/README.md).
@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine

    static func frame(_ id: UInt32, _ kind: WireV1.Frame.Kind) -> WireV1.Frame {
        WireV1.Frame(streamID: id, kind: kind)
    }

    static let hello = frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: nil, agent: "peer")))
    static let start = WireV1.CallStart(method: "/tokenet.testing.v1.Echo/Unary")

    static func server(_ settings: ConnectionSettings = .defaults) -> Machine {
        var machine = Machine(role: .server, settings: settings)
        _ = machine.start()
        _ = machine.receive(hello)
        return machine
    }

    static func client(_ peer: WireV1.Settings? = nil) -> Machine {
        var machine = Machine(role: .client)
        _ = machine.start()
        _ = machine.receive(frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: peer))))
        return machine
    }

    static func goawayCode(_ actions: Machine.Actions) -> WireV1.GoAwayCode? {
        for case .write(let frame) in actions {
            if case .goaway(let goaway) = frame.kind { return goaway.code }
        }
        return nil
    }

    @Test func startSendsHelloWithSettings() {
        var machine = Machine(role: .client, settings: ConnectionSettings(maxConcurrentStreams: 7), agent: "a/1")
        let actions = machine.start()
        let expected = WireV1.Hello(
            protocolVersion: 1,
            settings: WireV1.Settings(maxFrameSize: 4_194_304, maxConcurrentStreams: 7, initialStreamWindow: 1_048_576),
            agent: "a/1"
        )
        #expect(actions == [.write(Self.frame(0, .hello(expected)))])
        #expect(machine.start() == [])
    }

    @Test func firstFrameMustBeHello() {
        var machine = Machine(role: .server)
        _ = machine.start()
        let actions = machine.receive(Self.frame(1, .callStart(Self.start)))
        #expect(Self.goawayCode(actions) == .protocolError)
        #expect(actions.last == .closeConnection(error: "the first frame must be hello"))
        #expect(machine.state == .closed)
        // A hello on a stream other than 0 is told as such, not as a frame that is no hello.
        var misplaced = Machine(role: .server)
        _ = misplaced.start()
        let hello = misplaced.receive(Self.frame(1, .hello(WireV1.Hello(protocolVersion: 1))))
        #expect(Self.goawayCode(hello) == .protocolError)
        #expect(hello.last == .closeConnection(error: "the hello came on stream 1; it must be on stream 0"))
    }

    /// An empty frame (a length prefix of 0) decodes to a frame without a kind. Anywhere else such a frame is ignored;
    /// as the first frame it is refused like any other frame that is not the hello, on either side.
    @Test func anEmptyFirstFrameIsRefusedOnBothSides() throws {
        var decoder = FrameDecoder()
        decoder.feed([0, 0, 0, 0])
        let empty = try #require(try decoder.nextFrame())
        #expect(empty == WireV1.Frame())
        let reason = "the first frame must be hello"
        let goaway = Self.frame(0, .goaway(WireV1.GoAway(code: .protocolError, reason: reason)))

        var server = Machine(role: .server)
        _ = server.start()
        #expect(server.receive(empty) == [.write(goaway), .closeConnection(error: reason)])
        #expect(server.state == .closed)

        var client = Machine(role: .client)
        _ = client.start()
        let (id, _) = try client.openCall(Self.start)
        #expect(
            client.receive(empty) == [
                .write(goaway),
                .failCall(streamID: id, code: .unavailable, message: "connection closed: \(reason)"),
                .closeConnection(error: reason),
            ])
        #expect(client.state == .closed)
    }

    @Test func unsupportedVersionGetsAReadableGoAway() {
        var machine = Machine(role: .server)
        _ = machine.start()
        let actions = machine.receive(Self.frame(0, .hello(WireV1.Hello(protocolVersion: 0))))
        let reason = "protocol version 0 is not supported; this node speaks 1"
        #expect(
            actions == [
                .write(Self.frame(0, .goaway(WireV1.GoAway(code: .unsupportedVersion, reason: reason)))),
                .closeConnection(error: reason),
            ]
        )
    }

    /// A hello announcing a max_frame_size below the floor (16 KiB) is refused with a goaway that names the floor, on
    /// either side: a status such as RESOURCE_EXHAUSTED with its message would not fit in the peer's frames.
    @Test(arguments: [Machine.Role.server, .client])
    func aHelloAnnouncingFramesBelowTheFloorIsRefused(_ role: Machine.Role) {
        func hello(_ maxFrameSize: UInt32) -> WireV1.Frame {
            Self.frame(
                0, .hello(WireV1.Hello(protocolVersion: 1, settings: WireV1.Settings(maxFrameSize: maxFrameSize))))
        }
        var machine = Machine(role: role)
        _ = machine.start()
        let reason = "max_frame_size 100 is below the minimum of 16384 bytes"
        #expect(
            machine.receive(hello(100)) == [
                .write(Self.frame(0, .goaway(WireV1.GoAway(code: .protocolError, reason: reason)))),
                .closeConnection(error: reason),
            ])
        #expect(machine.state == .closed)
        for accepted: UInt32 in [16_384, 0] {
            var machine = Machine(role: role)
            _ = machine.start()
            #expect(machine.receive(hello(accepted)) == [], "max_frame_size \(accepted)")
            #expect(machine.state == .active)
        }
    }

    /// A status too large for one of the peer's frames is cut to fit, keeping its code: the peer would refuse a larger
    /// frame, and the whole connection with it. A status that fits leaves as it is.
    @Test func aStatusIsCutToFitThePeersFrames() throws {
        var machine = Machine(role: .server)
        _ = machine.start()
        _ = machine.receive(
            Self.frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: WireV1.Settings(maxFrameSize: 16_384)))))
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        _ = machine.receive(Self.frame(3, .callStart(Self.start)))
        let large = WireV1.Status(
            code: .resourceExhausted, message: String(repeating: "é", count: 10_000),
            details: [WireV1.StatusDetail(type: "tokenet.testing.v1.Scalars", value: Data(count: 1000))],
            trailers: [WireV1.MetadataEntry(key: "k", value: .text("v"))])
        let actions = machine.sendStatus(1, large)
        guard case .write(let frame)? = actions.first, case .status(let sent)? = frame.kind, actions.count == 1 else {
            Issue.record("\(actions)")
            return
        }
        #expect(sent.code == .resourceExhausted)
        #expect(sent.details.isEmpty && sent.trailers.isEmpty)
        #expect(sent.message.hasPrefix("éé") && sent.message.hasSuffix(WireV1.Status.cutShortNote))
        let size = try FrameEncoder().encode(frame).count - FrameFormat.lengthPrefixSize
        #expect(size <= 16_384)
        #expect(size > 16_300, "no more is cut than must be")
        let fits = WireV1.Status(
            code: .notFound, message: "no such card", details: [WireV1.StatusDetail(type: "a.B", value: Data([1]))])
        #expect(machine.sendStatus(3, fits) == [.write(Self.frame(3, .status(fits)))])
    }

    /// A NUL in a status message, a cancel reason or a goaway reason (an error that quotes a peer's input) is sent
    /// as `\0`: protobuf-c cannot encode it in a string, and the failed encode ended the whole connection.
    @Test func aNULInAStatusOrReasonIsWrittenAsAnEscape() throws {
        var machine = Machine(role: .server)
        _ = machine.start()
        _ = machine.receive(Self.frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: WireV1.Settings()))))
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        let actions = machine.sendStatus(1, WireV1.Status(code: .notFound, message: "no key \"k\u{0}\""))
        guard case .write(let frame)? = actions.first, case .status(let sent)? = frame.kind else {
            Issue.record("\(actions)")
            return
        }
        #expect(sent.message == #"no key "k\0""#)
        _ = try FrameEncoder().encode(frame)
        #expect(throws: WireError.self) {
            try FrameEncoder().encode(Self.frame(1, .status(WireV1.Status(code: .notFound, message: "k\u{0}"))))
        }
        let goaway = WireV1.GoAway(reason: "a\u{0}b").fitting(inFrameOf: 16_384)
        #expect(goaway.reason == #"a\0b"#)
        #expect(WireV1.Cancel(reason: "\u{0}").fitting(inFrameOf: 16_384).reason == #"\0"#)
    }

    /// A status that fits the peer's frames but would be a frame over 64 KiB of more fields than a peer reads in one
    /// (`FrameFormat.maximumLargeFrameFields`) loses its details and trailers, and keeps its whole message.
    @Test func aStatusOfTooManyFieldsLosesItsTrailers() throws {
        var machine = Machine(role: .server)
        _ = machine.start()
        _ = machine.receive(Self.frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: WireV1.Settings()))))
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        let trailers = [WireV1.MetadataEntry](
            repeating: WireV1.MetadataEntry(key: "k", value: .text("0123456789")), count: 5000)
        let status = WireV1.Status(code: .aborted, message: "busy", trailers: trailers)
        let actions = machine.sendStatus(1, status)
        guard case .write(let frame)? = actions.first, case .status(let sent)? = frame.kind else {
            Issue.record("\(actions)")
            return
        }
        #expect(sent == WireV1.Status(code: .aborted, message: "busy"))
        var decoder = FrameDecoder()
        decoder.feed(try FrameEncoder().encode(WireV1.Frame(streamID: 1, kind: .status(status))))
        #expect(throws: WireError.self) { try decoder.nextFrame() }
    }

    /// A client's cancel and goaway reasons come from the application and can be long: each is cut to fit the
    /// peer's frames, keeping the call and the goaway's code, while the caller's own failure keeps the whole reason.
    /// Before the peer's hello, the floor every peer accepts is the limit.
    @Test func cancelAndGoAwayReasonsAreCutToFitThePeersFrames() throws {
        let long = String(repeating: "ü", count: 20_000)
        func sent(_ actions: Machine.Actions) throws -> (frame: WireV1.Frame, size: Int) {
            for case .write(let frame) in actions {
                return (frame, try FrameEncoder().encode(frame).count - FrameFormat.lengthPrefixSize)
            }
            throw RPCError(.internal, "nothing written: \(actions)")
        }

        var client = Self.client(WireV1.Settings(maxFrameSize: 16_384))
        let (id, _) = try client.openCall(Self.start)
        let cancelActions = client.cancelCall(id, reason: long)
        let cancel = try sent(cancelActions)
        guard case .cancel(let value) = cancel.frame.kind else { throw RPCError(.internal, "\(cancel.frame)") }
        #expect(cancel.frame.streamID == id)
        let cancelCut = value.reason.hasPrefix("üü") && value.reason.hasSuffix(FrameFitting.reasonCutShortNote)
        #expect(cancelCut, "the reason keeps its start and says it was cut")
        #expect(cancel.size <= 16_384 && cancel.size > 16_300, "\(cancel.size) bytes")
        #expect(cancelActions.contains(.failCall(streamID: id, code: .cancelled, message: long)))

        let goaway = try sent(client.beginShutdown(reason: long))
        guard case .goaway(let value) = goaway.frame.kind else { throw RPCError(.internal, "\(goaway.frame)") }
        #expect(value.code == .shuttingDown)
        let goawayCut = value.reason.hasSuffix(FrameFitting.reasonCutShortNote)
        #expect(goawayCut, "the reason says it was cut")
        #expect(goaway.size <= 16_384 && goaway.size > 16_300, "\(goaway.size) bytes")

        var early = Machine(role: .client)
        _ = early.start()
        let beforeHello = try sent(early.beginShutdown(reason: long))
        #expect(beforeHello.size <= ConnectionSettings.minimumMaxFrameSize, "\(beforeHello.size) bytes")

        var roomy = Self.client(WireV1.Settings(maxFrameSize: 1_000_000))
        let (roomyID, _) = try roomy.openCall(Self.start)
        #expect(
            try sent(roomy.cancelCall(roomyID, reason: long)).frame
                == Self.frame(roomyID, .cancel(WireV1.Cancel(reason: long))), "a reason that fits leaves whole")
    }

    @Test func noHelloInTimeClosesTheConnectionOnlyBeforeTheHello() throws {
        var waiting = Machine(role: .client)
        _ = waiting.start()
        _ = try waiting.openCall(Self.start)
        let reason = "no hello from the peer within 10.0 seconds: it does not speak Tokenet, or it hangs"
        #expect(
            waiting.helloTimedOut(after: "10.0 seconds") == [
                .write(Self.frame(0, .goaway(WireV1.GoAway(code: .protocolError, reason: reason)))),
                .failCall(streamID: 1, code: .unavailable, message: "connection closed: \(reason)"),
                .closeConnection(error: reason),
            ]
        )
        var greeted = Self.client()
        #expect(greeted.helloTimedOut(after: "10.0 seconds") == [])
        #expect(greeted.state == .active)
    }

    @Test func newerPeerVersionIsAccepted() {
        var machine = Machine(role: .server)
        _ = machine.start()
        #expect(machine.receive(Self.frame(0, .hello(WireV1.Hello(protocolVersion: 9)))) == [])
        #expect(machine.state == .active)
    }

    @Test func unaryCallOnTheServer() {
        var machine = Self.server()
        let request = Data([1, 2, 3])
        #expect(machine.receive(Self.frame(1, .callStart(Self.start))) == [.startHandler(streamID: 1, Self.start)])
        #expect(
            machine.receive(Self.frame(1, .message(WireV1.Message(data: request))))
                == [.deliverMessage(streamID: 1, request)]
        )
        #expect(machine.receive(Self.frame(1, .halfClose(WireV1.HalfClose()))) == [.deliverEndOfRequests(streamID: 1)])
        let response = Data([9])
        #expect(machine.sendMessage(1, response) == [.write(Self.frame(1, .message(WireV1.Message(data: response))))])
        let ok = WireV1.Status(code: .ok)
        #expect(machine.sendStatus(1, ok) == [.write(Self.frame(1, .status(ok)))])
        #expect(machine.streams.isEmpty)
        // Frames for a finished call are ignored: they may have crossed the status on the wire.
        #expect(machine.receive(Self.frame(1, .message(WireV1.Message(data: request)))) == [])
    }

    @Test func unaryCallOnTheClient() throws {
        var machine = Self.client()
        let (id, actions) = try machine.openCall(Self.start)
        #expect(id == 1)
        #expect(actions == [.write(Self.frame(1, .callStart(Self.start)))])
        #expect(machine.sendMessage(1, Data([1])) == [.write(Self.frame(1, .message(WireV1.Message(data: Data([1])))))])
        #expect(machine.sendEndOfRequests(1) == [.write(Self.frame(1, .halfClose(WireV1.HalfClose())))])
        #expect(machine.sendMessage(1, Data([2])) == [], "nothing is sent after half-close")
        #expect(
            machine.receive(Self.frame(1, .message(WireV1.Message(data: Data([7])))))
                == [.deliverMessage(streamID: 1, Data([7]))]
        )
        let status = WireV1.Status(code: .notFound, message: "no such card")
        #expect(machine.receive(Self.frame(1, .status(status))) == [.finishCall(streamID: 1, status)])
        let (second, _) = try machine.openCall(Self.start)
        #expect(second == 3, "client ids are odd and increase")
    }

    @Test(arguments: [UInt32(2), 0])
    func invalidCallIDsAreProtocolErrors(id: UInt32) {
        var machine = Self.server()
        #expect(Self.goawayCode(machine.receive(Self.frame(id, .callStart(Self.start)))) == .protocolError)
    }

    @Test func callIDsAbove2To31AreProtocolErrors() {
        var machine = Self.server()
        #expect(
            machine.receive(Self.frame(2_147_483_647, .callStart(Self.start))).contains { action in
                if case .startHandler(streamID: 2_147_483_647, _) = action { return true }
                return false
            })
        var other = Self.server()
        let actions = other.receive(Self.frame(2_147_483_649, .callStart(Self.start)))
        #expect(Self.goawayCode(actions) == .protocolError)
        #expect(other.state == .closed)
    }

    /// The last call id drains the connection instead of leaving it open and failing every later call: the call
    /// finishes, then the connection closes, and a channel opens a new one meanwhile.
    @Test func theLastCallIDDrainsTheClientConnection() throws {
        var machine = Self.client()
        machine.nextStreamID = 2_147_483_645
        let (first, firstActions) = try machine.openCall(Self.start)
        #expect(first == 2_147_483_645)
        #expect(firstActions == [.write(Self.frame(first, .callStart(Self.start)))])
        #expect(machine.state == .active)
        let (last, lastActions) = try machine.openCall(Self.start)
        #expect(last == 2_147_483_647)
        let goaway = WireV1.GoAway(code: .shuttingDown, reason: "call ids are exhausted on this connection")
        #expect(
            lastActions == [.write(Self.frame(last, .callStart(Self.start))), .write(Self.frame(0, .goaway(goaway)))])
        #expect(machine.state == .draining)
        let error = #expect(throws: RPCError.self) { try machine.openCall(Self.start) }
        #expect(error?.code == .unavailable)
        _ = machine.receive(Self.frame(first, .status(WireV1.Status())))
        #expect(
            machine.receive(Self.frame(last, .status(WireV1.Status())))
                == [.finishCall(streamID: last, WireV1.Status()), .closeConnection(error: nil)]
        )
    }

    @Test func callIDsMustIncrease() {
        var machine = Self.server()
        _ = machine.receive(Self.frame(5, .callStart(Self.start)))
        let actions = machine.receive(Self.frame(3, .callStart(Self.start)))
        #expect(Self.goawayCode(actions) == .protocolError)
        #expect(actions.contains(.cancelHandler(streamID: 5)), "the running call is cancelled")
    }

    @Test func excessCallsAreRefusedWithResourceExhausted() {
        var machine = Self.server(ConnectionSettings(maxConcurrentStreams: 2))
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        _ = machine.receive(Self.frame(3, .callStart(Self.start)))
        let refused = WireV1.Status(code: .resourceExhausted, message: "too many concurrent calls: the limit is 2")
        #expect(
            machine.receive(Self.frame(5, .callStart(Self.start))) == [
                .write(Self.frame(5, .status(refused))), .refusedCall(streamID: 5, start: Self.start, refused),
            ])
        _ = machine.sendStatus(1, WireV1.Status())
        #expect(machine.receive(Self.frame(7, .callStart(Self.start))) == [.startHandler(streamID: 7, Self.start)])
    }

    @Test func clientCancelStopsTheHandler() {
        var server = Self.server()
        _ = server.receive(Self.frame(1, .callStart(Self.start)))
        #expect(
            server.receive(Self.frame(1, .cancel(WireV1.Cancel(reason: "user gave up")))) == [
                .cancelHandler(streamID: 1)
            ])
        #expect(server.sendStatus(1, WireV1.Status()) == [], "a cancelled call sends nothing more")
    }

    @Test func cancelOnTheClient() throws {
        var machine = Self.client()
        let (id, _) = try machine.openCall(Self.start)
        #expect(
            machine.cancelCall(id, reason: "deadline")
                == [
                    .write(Self.frame(id, .cancel(WireV1.Cancel(reason: "deadline")))),
                    .failCall(streamID: id, code: .cancelled, message: "deadline"),
                ]
        )
    }

    @Test func messageAfterHalfCloseIsAStreamError() {
        var machine = Self.server()
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        _ = machine.receive(Self.frame(1, .halfClose(WireV1.HalfClose())))
        let actions = machine.receive(Self.frame(1, .message(WireV1.Message(data: Data([1])))))
        let status = WireV1.Status(code: .internal, message: "message received after the end of requests")
        #expect(actions == [.cancelHandler(streamID: 1), .write(Self.frame(1, .status(status)))])
        #expect(machine.state == .active, "other calls carry on")
    }

    /// A message on an id with no call is ignored, whether it came before a call_start or after the call ended
    /// (Protos/README.md, sections 5 and 6): the server cannot tell a frame that crossed a status on the wire from
    /// one sent too early, and the ids the client opens next stay its own.
    @Test func aMessageOnAnIdWithNoCallIsIgnored() {
        var machine = Self.server()
        #expect(machine.receive(Self.frame(99, .message(WireV1.Message(data: Data([1]))))) == [])
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        _ = machine.receive(Self.frame(1, .cancel(WireV1.Cancel())))
        #expect(machine.receive(Self.frame(1, .message(WireV1.Message(data: Data([1]))))) == [])
        let next = machine.receive(Self.frame(3, .callStart(Self.start)))
        #expect(next == [.startHandler(streamID: 3, Self.start)])
        #expect(machine.state == .active)
    }

    @Test func receiveWindowIsEnforced() {
        var machine = Self.server(ConnectionSettings(initialStreamWindow: 10))
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        #expect(machine.receive(Self.frame(1, .message(WireV1.Message(data: Data(count: 6))))).count == 1)
        let actions = machine.receive(Self.frame(1, .message(WireV1.Message(data: Data(count: 6)))))
        let status = WireV1.Status(code: .resourceExhausted, message: "flow-control window exceeded")
        #expect(actions == [.cancelHandler(streamID: 1), .write(Self.frame(1, .status(status)))])
    }

    static func message(_ id: UInt32, _ count: Int) -> WireV1.Frame {
        frame(id, .message(WireV1.Message(data: Data(count: count))))
    }

    static func grant(_ id: UInt32, _ increment: UInt32) -> Machine.Action {
        .write(frame(id, .windowUpdate(WireV1.WindowUpdate(increment: increment))))
    }

    /// A consumer that keeps up grants once per batch it catches up with, not once per message.
    @Test func consumedDataIsGrantedBackWhenTheApplicationCatchesUp() {
        var machine = Self.server(ConnectionSettings(initialStreamWindow: 100))
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        for _ in 0..<3 { #expect(machine.receive(Self.message(1, 10)).count == 1) }
        #expect(machine.consumed(1, byteCount: 10) == [], "two messages still wait for the application")
        #expect(machine.consumed(1, byteCount: 10) == [])
        #expect(machine.consumed(1, byteCount: 10) == [Self.grant(1, 30)], "caught up: all of it is granted")
        #expect(machine.receive(Self.message(1, 100)).count == 1, "the whole window is open again")
    }

    /// Half the window is granted even while messages still wait, so a fast sender seldom waits.
    @Test func halfTheWindowIsGrantedBeforeTheApplicationCatchesUp() {
        var machine = Self.server(ConnectionSettings(initialStreamWindow: 10))
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        _ = machine.receive(Self.message(1, 6))
        _ = machine.receive(Self.message(1, 4))
        #expect(machine.consumed(1, byteCount: 6) == [Self.grant(1, 6)])
        #expect(machine.receive(Self.message(1, 6)).count == 1)
        let status = WireV1.Status(code: .resourceExhausted, message: "flow-control window exceeded")
        #expect(
            machine.receive(Self.message(1, 1)) == [
                .cancelHandler(streamID: 1), .write(Self.frame(1, .status(status))),
            ],
            "the 4 bytes not yet consumed were not granted")
    }

    /// A 40-byte then a 70-byte message through a 100-byte window: 40 consumed is less than half the window, and
    /// 70 does not fit in the 60 left. The receiver has caught up, so it grants, and the sender's queue moves.
    @Test func aSenderWaitingForWindowIsNotLeftWaiting() throws {
        var sender = Self.client(WireV1.Settings(initialStreamWindow: 100))
        var receiver = Self.server(ConnectionSettings(initialStreamWindow: 100))
        let (id, start) = try sender.openCall(Self.start)
        for case .write(let frame) in start { _ = receiver.receive(frame) }
        let first = sender.sendMessage(id, Data(count: 40))
        #expect(sender.sendMessage(id, Data(count: 70)) == [], "waits for window")
        for case .write(let frame) in first {
            #expect(receiver.receive(frame) == [.deliverMessage(streamID: id, Data(count: 40))])
        }
        let grant = receiver.consumed(id, byteCount: 40)
        #expect(grant == [Self.grant(id, 40)])
        var released: [Machine.Action] = []
        for case .write(let frame) in grant { released += sender.receive(frame) }
        #expect(released == [.write(Self.message(id, 70))])
    }

    /// A client's calls opened before the server's hello hold their messages until it comes: the server enforces
    /// the window and frame size it announces from the first byte, and they may be below the defaults.
    @Test func messagesBeforeTheServersHelloWaitForItsLimits() throws {
        var client = Machine(role: .client)
        _ = client.start()
        let (small, _) = try client.openCall(Self.start)
        let (large, _) = try client.openCall(Self.start)
        let (empty, _) = try client.openCall(Self.start)
        #expect(client.directSendAllowance(small) == nil, "every message takes the queue")
        #expect(client.sendMessage(empty, Data()) == [], "even an empty one")
        #expect(client.sendMessage(small, Data(count: 60)) == [], "held until the hello")
        #expect(client.sendMessage(small, Data(count: 40)) == [])
        #expect(client.sendEndOfRequests(small) == [], "behind its messages")
        #expect(client.sendMessage(large, Data(count: 200)) == [], "held too, whatever its size")
        let actions = client.receive(
            Self.frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: .init(initialStreamWindow: 100)))))
        let message = "a 200-byte message is larger than the peer accepts: at most 100 bytes (its flow-control window)"
        #expect(
            actions == [
                .write(Self.message(small, 60)), .write(Self.message(small, 40)),
                .write(Self.frame(small, .halfClose(WireV1.HalfClose()))),
                .write(Self.frame(large, .cancel(WireV1.Cancel(reason: message)))),
                .failCall(streamID: large, code: .resourceExhausted, message: message),
                .write(Self.message(empty, 0)),
            ])
        // Opened after the hello: the announced window at once.
        let (later, _) = try client.openCall(Self.start)
        #expect(client.directSendAllowance(later) == 100)

        // Held before a hello that announces more than the defaults, a message above them goes.
        var generous = Machine(role: .client)
        _ = generous.start()
        let (big, _) = try generous.openCall(Self.start)
        let size = ConnectionSettings.defaults.initialStreamWindow + 1
        #expect(generous.sendMessage(big, Data(count: size)) == [])
        let settings = WireV1.Settings(initialStreamWindow: UInt32(2 * size))
        let sent = generous.receive(Self.frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: settings))))
        #expect(sent == [.write(Self.message(big, size))])
    }

    /// No window is granted for messages the peer will not send: after its half-close, or for a call whose
    /// direction carries one message.
    @Test func nothingIsGrantedWhenNoMoreMessagesCome() {
        var machine = Self.server(ConnectionSettings(initialStreamWindow: 100))
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        _ = machine.receive(Self.message(1, 60))
        #expect(machine.consumed(1, byteCount: 60, moreExpected: false) == [], "a single request")
        _ = machine.receive(Self.frame(3, .callStart(Self.start)))
        _ = machine.receive(Self.message(3, 60))
        _ = machine.receive(Self.frame(3, .halfClose(WireV1.HalfClose())))
        #expect(machine.consumed(3, byteCount: 60) == [], "the client half-closed")
    }

    @Test func sendWindowQueuesUntilTheGrantAndKeepsTheStatusBehind() {
        var small = Machine(role: .server)
        _ = small.start()
        _ = small.receive(
            Self.frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: .init(initialStreamWindow: 4)))))
        _ = small.receive(Self.frame(1, .callStart(Self.start)))
        #expect(small.sendMessage(1, Data(count: 3)).count == 1)
        #expect(small.sendMessage(1, Data(count: 3)) == [], "beyond the window: queued")
        #expect(small.pendingBytes(1) == 3)
        #expect(small.sendStatus(1, WireV1.Status()) == [], "the status waits behind the queued message")
        let actions = small.receive(Self.frame(1, .windowUpdate(WireV1.WindowUpdate(increment: 3))))
        #expect(
            actions == [
                .write(Self.frame(1, .message(WireV1.Message(data: Data(count: 3))))),
                .write(Self.frame(1, .status(WireV1.Status()))),
            ]
        )
    }

    /// A message packed straight into its frame is sent only while nothing waits and the window admits it; what
    /// it used counts against the window like any other message.
    @Test func directSendsFollowTheWindowAndTheQueue() throws {
        var small = Machine(role: .server)
        _ = small.start()
        _ = small.receive(
            Self.frame(0, .hello(WireV1.Hello(protocolVersion: 1, settings: .init(initialStreamWindow: 10)))))
        #expect(small.directSendAllowance(1) == nil, "no such call")
        _ = small.receive(Self.frame(1, .callStart(Self.start)))
        #expect(small.directSendAllowance(1) == 10)
        small.sentDirectly(1, byteCount: 6)
        #expect(small.directSendAllowance(1) == 4)
        #expect(small.sendMessage(1, Data(count: 5)) == [], "beyond what is left of the window: queued")
        #expect(small.directSendAllowance(1) == nil, "a message waits: a later one must not overtake it")
        let actions = small.receive(Self.frame(1, .windowUpdate(WireV1.WindowUpdate(increment: 6))))
        #expect(actions == [.write(Self.frame(1, .message(WireV1.Message(data: Data(count: 5)))))])
        #expect(small.directSendAllowance(1) == 5)
        _ = small.sendStatus(1, WireV1.Status())
        #expect(small.directSendAllowance(1) == nil, "the call is over")

        var client = Self.client(WireV1.Settings(maxFrameSize: 16_384))
        let (id, _) = try client.openCall(Self.start)
        #expect(client.directSendAllowance(id) == 16_384 - 64, "capped below the peer's largest frame")
        _ = client.sendEndOfRequests(id)
        #expect(client.directSendAllowance(id) == nil, "half-closed")
    }

    /// A message the peer's window could never admit fails its call at once instead of waiting forever.
    @Test func aMessageLargerThanThePeersWindowFailsItsCall() throws {
        var machine = Self.client(WireV1.Settings(initialStreamWindow: 100))
        let (id, _) = try machine.openCall(Self.start)
        let (other, _) = try machine.openCall(Self.start)
        let actions = machine.sendMessage(id, Data(count: 101))
        let reason = "a 101-byte message is larger than the peer accepts: at most 100 bytes (its flow-control window)"
        #expect(
            actions == [
                .write(Self.frame(id, .cancel(WireV1.Cancel(reason: reason)))),
                .failCall(streamID: id, code: .resourceExhausted, message: reason),
            ])
        #expect(machine.sendMessage(other, Data(count: 100)).count == 1, "a message of the whole window still goes")
    }

    @Test func oversizedOutboundMessageFailsOnlyThatCall() throws {
        var machine = Self.client(WireV1.Settings(maxFrameSize: 16_384))
        let (id, _) = try machine.openCall(Self.start)
        let actions = machine.sendMessage(id, Data(count: 20_000))
        #expect(actions.count == 2)
        #expect(
            actions.last
                == .failCall(
                    streamID: id,
                    code: .resourceExhausted,
                    message: "a 20000-byte message is larger than the peer accepts: at most 16320 bytes (its maximum "
                        + "frame size of 16384, less 64 for the frame)"
                ))
    }

    /// A call_start over the peer's frame limit would end the whole connection at the peer; the call is refused
    /// here instead, before it takes a stream id, and the connection's other calls carry on.
    @Test func aCallStartOverThePeersFramesFailsOnlyThatCall() throws {
        var machine = Self.client(WireV1.Settings(maxFrameSize: 16_384))
        let (first, _) = try machine.openCall(Self.start)
        var large = Self.start
        large.metadata = [WireV1.MetadataEntry(key: "x-blob-bin", value: .binary(Data(count: 17_000)))]
        #expect {
            _ = try machine.openCall(large)
        } throws: { error in
            (error as? RPCError)?.code == .resourceExhausted
                && (error as? RPCError)?.message.contains("peer's maximum frame size of 16384 bytes") == true
        }
        let (second, actions) = try machine.openCall(Self.start)
        #expect(second == first + 2)
        #expect(actions == [.write(Self.frame(second, .callStart(Self.start)))])
    }

    /// The bound the check above uses is never below the size of the encoded frame.
    @Test(arguments: [0, 1, 3, 40])
    func theCallStartSizeBoundIsAtLeastItsEncodedSize(entries: Int) throws {
        var start = WireV1.CallStart(method: "/tokenet.tsp.v1.Provisioning/Digitize", timeoutMicros: .max)
        for index in 0..<entries {
            start.metadata.append(
                WireV1.MetadataEntry(
                    key: "key-\(index)", value: index % 2 == 0 ? .text("value \(index)") : .binary(Data(count: 200))))
        }
        start.metadata.append(WireV1.MetadataEntry(key: "no-value"))
        let encoded = try Self.frame(.max, .callStart(start)).serializedSize()
        let bound = Machine.callStartSizeBound(start)
        #expect(bound >= encoded && bound <= encoded + 64 + 18 * (entries + 1), "\(bound) for \(encoded)")
    }

    @Test func pingIsAnsweredWithTheSamePayload() {
        var machine = Self.server()
        #expect(
            machine.receive(Self.frame(0, .ping(WireV1.Ping(payload: 42))))
                == [.write(Self.frame(0, .pong(WireV1.Pong(payload: 42))))]
        )
        #expect(machine.receive(Self.frame(0, .pong(WireV1.Pong(payload: 7)))) == [.pongReceived(payload: 7)])
    }

    @Test func gracefulShutdownDrainsRunningCallsAndRefusesNewOnes() {
        var machine = Self.server()
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        let goaway = WireV1.GoAway(lastStreamID: 1, code: .shuttingDown, reason: "the node is shutting down")
        #expect(machine.beginShutdown() == [.write(Self.frame(0, .goaway(goaway)))])
        let refused = WireV1.Status(code: .unavailable, message: "the node is shutting down; retry on a new connection")
        #expect(
            machine.receive(Self.frame(3, .callStart(Self.start))) == [
                .write(Self.frame(3, .status(refused))), .refusedCall(streamID: 3, start: Self.start, refused),
            ])
        #expect(
            machine.sendStatus(1, WireV1.Status())
                == [.write(Self.frame(1, .status(WireV1.Status()))), .closeConnection(error: nil)]
        )
    }

    /// A client that begins closing before the server's hello has come takes that hello as the first frame: it took
    /// it for a second hello, sent a PROTOCOL_ERROR goaway and failed the calls it was draining.
    @Test func aHelloAfterAClientBeganClosingIsTheFirstHello() throws {
        var client = Machine(role: .client)
        _ = client.start()
        let (id, _) = try client.openCall(Self.start)
        _ = client.beginShutdown()
        #expect(client.receive(Self.hello) == [])
        #expect(client.state == .draining)
        #expect(client.peerHelloReceived)
        let ended = client.receive(Self.frame(id, .status(WireV1.Status())))
        #expect(Self.goawayCode(ended) == nil)
        #expect(ended.last == .closeConnection(error: nil))
        #expect(client.state == .closed)
        // Anything but a hello first is still refused.
        var early = Machine(role: .client)
        _ = early.start()
        _ = try early.openCall(Self.start)
        _ = early.beginShutdown()
        #expect(Self.goawayCode(early.receive(Self.frame(1, .status(WireV1.Status())))) == .protocolError)
    }

    /// A stream that would outlive the drain ends with its status and its handler stops; the last one closes.
    @Test func anEndedCallStopsItsHandlerAndClosesADrainedConnection() {
        var machine = Self.server()
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        _ = machine.receive(Self.frame(3, .callStart(Self.start)))
        _ = machine.beginShutdown()
        let ended = WireV1.Status(code: .unavailable, message: "going")
        #expect(machine.endCall(1, ended) == [.cancelHandler(streamID: 1), .write(Self.frame(1, .status(ended)))])
        #expect(machine.endCall(1, ended) == [])
        #expect(
            machine.endCall(3, ended)
                == [
                    .cancelHandler(streamID: 3), .write(Self.frame(3, .status(ended))), .closeConnection(error: nil),
                ])
        #expect(machine.state == .closed)
    }

    /// At the end of the drain period every call left ends UNAVAILABLE and the connection closes cleanly: calls that
    /// wait for a peer which never sends no longer hold it open.
    @Test func theEndOfTheDrainEndsEveryCallLeft() throws {
        var server = Self.server()
        _ = server.receive(Self.frame(1, .callStart(Self.start)))
        _ = server.receive(Self.frame(3, .callStart(Self.start)))
        _ = server.beginShutdown()
        let status = WireV1.Status(code: .unavailable, message: "too slow")
        #expect(
            server.drainTimedOut(reason: "too slow")
                == [
                    .cancelHandler(streamID: 1), .write(Self.frame(1, .status(status))),
                    .cancelHandler(streamID: 3), .write(Self.frame(3, .status(status))),
                    .closeConnection(error: nil),
                ])
        #expect(server.state == .closed)
        #expect(server.drainTimedOut(reason: "again") == [])

        // A connection that had not begun its shutdown sends its goaway first; a client cancels its calls.
        var client = Self.client()
        _ = try client.openCall(Self.start)
        let goaway = WireV1.GoAway(
            lastStreamID: 0, code: .shuttingDown, reason: "the client is closing this connection")
        #expect(
            client.drainTimedOut(reason: "too slow")
                == [
                    .write(Self.frame(0, .goaway(goaway))),
                    .write(Self.frame(1, .cancel(WireV1.Cancel(reason: "too slow")))),
                    .failCall(streamID: 1, code: .unavailable, message: "too slow"),
                    .closeConnection(error: nil),
                ])
    }

    @Test func clientFailsCallsAboveTheGoAwayAndRefusesNewCalls() throws {
        var machine = Self.client()
        _ = try machine.openCall(Self.start)
        _ = try machine.openCall(Self.start)
        let goaway = WireV1.GoAway(lastStreamID: 1, code: .shuttingDown, reason: "bye")
        #expect(
            machine.receive(Self.frame(0, .goaway(goaway)))
                == [.refuseCall(streamID: 3, message: "bye (call not processed)", peerIsStopping: true)]
        )
        #expect(throws: RPCError.self) { try machine.openCall(Self.start) }
        #expect(
            machine.receive(Self.frame(1, .status(WireV1.Status())))
                == [.finishCall(streamID: 1, WireV1.Status()), .closeConnection(error: nil)]
        )
    }

    /// A peer that ends the connection with an error goaway and no reason: its code stands in for the reason in
    /// the failed calls and the close, which read "the peer closed the connection: " and nothing more.
    @Test func anErrorGoAwayWithoutAReasonIsReportedByItsCode() throws {
        var client = Self.client()
        _ = try client.openCall(Self.start)
        let reason = "goaway GO_AWAY_CODE_PROTOCOL_ERROR without a reason"
        #expect(
            client.receive(Self.frame(0, .goaway(WireV1.GoAway(lastStreamID: 1, code: .protocolError))))
                == [
                    .failCall(streamID: 1, code: .unavailable, message: "the peer closed the connection: \(reason)"),
                    .closeConnection(error: reason),
                ])
        var server = Self.server()
        _ = server.receive(Self.frame(1, .callStart(Self.start)))
        #expect(
            server.receive(Self.frame(0, .goaway(WireV1.GoAway(code: .unrecognized(99)))))
                == [.cancelHandler(streamID: 1), .closeConnection(error: "goaway code 99 without a reason")])
    }

    /// The client's goaway: the server takes no new call, lets the client's calls run, and leaves the close to the
    /// client, answering every call_start it still sends UNAVAILABLE. It closed as soon as no call was open, and a
    /// call sent after the goaway got no answer at all.
    @Test func aServerAnswersCallsAfterTheClientsGoAwayUntilTheClientCloses() {
        let reason = "the client sent goaway: this connection takes no new calls"
        let refused = WireV1.Status(code: .unavailable, message: "\(reason); retry on a new connection")
        let clientGoAway = WireV1.GoAway(code: .shuttingDown, reason: "the client is closing this connection")
        var machine = Self.server()
        _ = machine.receive(Self.frame(1, .callStart(Self.start)))
        #expect(machine.receive(Self.frame(0, .goaway(clientGoAway))) == [])
        #expect(machine.state == .draining)
        #expect(
            machine.receive(Self.frame(3, .callStart(Self.start))) == [
                .write(Self.frame(3, .status(refused))), .refusedCall(streamID: 3, start: Self.start, refused),
            ])
        let ok = WireV1.Status(code: .ok)
        #expect(machine.sendStatus(1, ok) == [.write(Self.frame(1, .status(ok)))], "the client closes, not the server")
        #expect(
            machine.receive(Self.frame(5, .callStart(Self.start))) == [
                .write(Self.frame(5, .status(refused))), .refusedCall(streamID: 5, start: Self.start, refused),
            ])
        #expect(machine.receive(Self.frame(0, .goaway(clientGoAway))) == [])
        #expect(
            machine.receive(Self.frame(7, .callStart(Self.start))) == [
                .write(Self.frame(7, .status(refused))), .refusedCall(streamID: 7, start: Self.start, refused),
            ])
        #expect(machine.transportClosed(reason: "the peer closed the connection") == [])
        #expect(machine.state == .closed)

        // With no call open, the idle timer closes such a connection, and so does this side's shutdown.
        var idle = Self.server()
        #expect(idle.receive(Self.frame(0, .goaway(clientGoAway))) == [])
        #expect(idle.state == .draining)
        let idleGoAway = WireV1.GoAway(code: .idleTimeout, reason: "no calls for 1 s")
        #expect(
            idle.idleTimedOut(after: "1 s") == [
                .write(Self.frame(0, .goaway(idleGoAway))), .closeConnection(error: nil),
            ])
        var stopping = Self.server()
        _ = stopping.receive(Self.frame(0, .goaway(clientGoAway)))
        let shutdown = WireV1.GoAway(code: .shuttingDown, reason: "the node is shutting down")
        #expect(stopping.beginShutdown() == [.write(Self.frame(0, .goaway(shutdown))), .closeConnection(error: nil)])

        // A server draining after its own goaway has said what it has to say, and closes once its calls have ended.
        var draining = Self.server()
        _ = draining.receive(Self.frame(1, .callStart(Self.start)))
        _ = draining.beginShutdown()
        #expect(draining.receive(Self.frame(0, .goaway(clientGoAway))) == [])
        let shuttingDown = WireV1.Status(
            code: .unavailable, message: "the node is shutting down; retry on a new connection")
        #expect(
            draining.receive(Self.frame(3, .callStart(Self.start))) == [
                .write(Self.frame(3, .status(shuttingDown))),
                .refusedCall(streamID: 3, start: Self.start, shuttingDown),
            ])
        #expect(draining.sendStatus(1, ok) == [.write(Self.frame(1, .status(ok))), .closeConnection(error: nil)])
    }

    @Test func lostTransportFailsClientCallsAndCancelsHandlers() throws {
        var client = Self.client()
        _ = try client.openCall(Self.start)
        #expect(
            client.transportClosed(reason: "EOF")
                == [.failCall(streamID: 1, code: .unavailable, message: "connection lost: EOF")]
        )
        var server = Self.server()
        _ = server.receive(Self.frame(1, .callStart(Self.start)))
        #expect(server.transportClosed(reason: "EOF") == [.cancelHandler(streamID: 1)])
    }

    @Test func undecodableBytesCloseTheConnectionWithTheRightCode() {
        var machine = Self.server()
        let tooLarge = machine.receiveUndecodable(WireError(.frameTooLarge, "frame of 9 MiB exceeds 4 MiB"))
        #expect(Self.goawayCode(tooLarge) == .frameTooLarge)
        var other = Self.server()
        #expect(Self.goawayCode(other.receiveUndecodable(WireError(.invalidMessage, "garbage"))) == .protocolError)
    }

    @Test func framesWithoutAKindAreIgnored() {
        var machine = Self.server()
        #expect(machine.receive(WireV1.Frame(streamID: 1)) == [])
        #expect(machine.state == .active)
    }

    @Test func idleTimeoutClosesOnlyAnIdleConnection() {
        var busy = Self.server()
        _ = busy.receive(Self.frame(1, .callStart(Self.start)))
        #expect(busy.idleTimedOut(after: "5 s") == [])
        var idle = Self.server()
        let goaway = WireV1.GoAway(code: .idleTimeout, reason: "no calls for 5 s")
        #expect(
            idle.idleTimedOut(after: "5 s") == [.write(Self.frame(0, .goaway(goaway))), .closeConnection(error: nil)]
        )
        // A peer that never sent its hello is told that, whichever of the two timers fires first when the hello
        // timeout is no longer than the idle one; with none (or a longer one), the idle goaway says it too.
        var silent = Machine(role: .server)
        _ = silent.start()
        let reason = "no hello from the peer within 5 s: it does not speak Tokenet, or it hangs"
        #expect(
            silent.idleTimedOut(after: "5 s", helloDue: true) == [
                .write(Self.frame(0, .goaway(WireV1.GoAway(code: .protocolError, reason: reason)))),
                .closeConnection(error: reason),
            ])
        var quiet = Machine(role: .server)
        _ = quiet.start()
        let idleGoAway = WireV1.GoAway(code: .idleTimeout, reason: "no calls for 5 s (and no hello from the peer)")
        #expect(
            quiet.idleTimedOut(after: "5 s") == [
                .write(Self.frame(0, .goaway(idleGoAway))), .closeConnection(error: nil),
            ])
    }

    @Test func keepaliveTimeoutIsAConnectionError() throws {
        var client = Self.client()
        _ = try client.openCall(Self.start)
        let actions = client.keepaliveTimedOut()
        #expect(Self.goawayCode(actions) == .keepaliveTimeout)
        #expect(
            actions.contains(
                .failCall(streamID: 1, code: .unavailable, message: "connection closed: no answer to keepalive ping")))
    }

    @Test func keepaliveTimeoutBeforeAnyHelloSaysSo() throws {
        var client = Machine(role: .client)
        _ = client.start()
        _ = try client.openCall(Self.start)
        let actions = client.keepaliveTimedOut()
        #expect(Self.goawayCode(actions) == .keepaliveTimeout)
        let message = "connection closed: no hello from the peer, and no answer to keepalive ping"
        #expect(actions.contains(.failCall(streamID: 1, code: .unavailable, message: message)), "\(actions)")
    }
}

@Suite struct TraceIDTests {
    @Test func traceIDsAreFifteenHexDigitsAndDistinct() {
        let ids = (0..<10_000).map { _ in Metadata.newTraceID() }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.utf8.count == 15 && $0.allSatisfy(\.isHexDigit) })
        #expect(ids.allSatisfy(Metadata.isValidTraceID))
    }

    /// Logs mask any run of 13 or more decimal digits as a card number: no id may hold one, or its log lines could no
    /// longer be matched across the nodes. The old ids held one about once in 300, so 200,000 would show it.
    @Test func traceIDsHoldNoCardNumberLengthRunOfDigits() {
        for _ in 0..<200_000 {
            let id = Metadata.newTraceID()
            let longestRun = id.split(whereSeparator: { !$0.isNumber }).map(\.count).max() ?? 0
            guard longestRun < 13 else {
                Issue.record("\(id) holds \(longestRun) digits in a row")
                return
            }
        }
    }

    /// The branch-free formatting against the plain one, on edge values and random ones.
    @Test func traceIDsSpellTheirBitsInHexAroundALetter() {
        var values: [UInt64] = [
            0, 1, 9, 10, 15, 0xFFFF_FFFF, 0x1_0000_0000, 0x0123_4567_89AB_CDEF, .max, 0x0999_9999_9999_9999,
            0x0000_0000_1000_0000, 0x5000_0000_0000_0000, 0xF000_0000_0000_0000,
        ]
        for _ in 0..<10_000 { values.append(UInt64.random(in: 0...UInt64.max)) }
        for value in values {
            func digits(_ bits: UInt64) -> String {
                let text = String(bits & 0x0FFF_FFFF, radix: 16)
                return String(repeating: "0", count: 7 - text.count) + text
            }
            let letter = Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(value >> 60) % 6))
            let expected = digits(value >> 32) + String(letter) + digits(value)
            #expect(Metadata.traceID(value) == expected, "\(String(value, radix: 16))")
        }
    }
}
