import Foundation
import TokenetWire

/// The protocol logic of one connection (Protos/README.md), with no I/O.
///
/// Every event — a frame that arrived, something the application asks for, the transport closing — is a mutating
/// method that returns the actions the driver must take, in order: frames to write, calls to start or cancel, data
/// to hand to a call, the connection to close. The driver owns sockets, tasks and timers and only switches on
/// actions, so every rule here is tested with plain event → action lists.
struct ConnectionStateMachine {
    enum Role: Sendable {
        case client
        case server
    }

    enum Action: Equatable {
        /// Write this frame to the peer.
        case write(WireV1.Frame)
        /// Server: a call was accepted; start its handler.
        case startHandler(streamID: UInt32, WireV1.CallStart)
        /// A request (server) or response (client) message arrived on a call.
        case deliverMessage(streamID: UInt32, Data)
        /// Server: the client sent its last request.
        case deliverEndOfRequests(streamID: UInt32)
        /// Client: the call ended with this status from the server.
        case finishCall(streamID: UInt32, WireV1.Status)
        /// Client: the call failed locally (connection lost, goaway, window exceeded); report this error.
        case failCall(streamID: UInt32, code: StatusCode, message: String)
        /// Client: a goaway says the server never processed this call (its id is above the goaway's last stream
        /// id); it fails with UNAVAILABLE and may go again on another connection. `peerIsStopping`: the goaway said
        /// the server is shutting down, not that it refused this connection (too many from one peer, an error).
        case refuseCall(streamID: UInt32, message: String, peerIsStopping: Bool)
        /// Server: stop this call's handler; nothing more is sent on the stream.
        case cancelHandler(streamID: UInt32)
        /// Server: a new call was answered with this status before any handler started (too many calls, a
        /// shutdown, a call_start this side cannot read, whose `start` is then nil), for the server's call log: no
        /// handler ever reports it.
        case refusedCall(streamID: UInt32, start: WireV1.CallStart?, WireV1.Status)
        /// The peer answered a ping.
        case pongReceived(payload: UInt64)
        /// Close the transport after writing what came before. `error` is nil for an orderly close.
        case closeConnection(error: String?)
    }

    /// What one event returns: usually none or one action, kept without a heap allocation.
    typealias Actions = ActionList<Action>

    enum State: Equatable {
        /// Our hello is out; the peer's has not arrived.
        case awaitingHello
        case active
        /// A goaway was sent (server) or received (client): no new calls, existing ones run to the end.
        case draining
        case closed
    }

    struct Stream {
        /// We will send nothing more but a status/cancel (client sent half-close).
        var localHalfClosed = false
        /// The peer will send no more messages (server: client half-closed).
        var remoteHalfClosed = false
        /// Bytes of message data we may still send before the peer grants more.
        var sendWindow: Int
        /// Bytes of message data the peer may still send before we grant more.
        var receiveWindow: Int
        /// Bytes consumed by the application and not yet granted back to the peer.
        var consumedSinceUpdate = 0
        /// Bytes delivered to the application and not yet consumed: zero when it has caught up with the peer.
        var unconsumed = 0
        /// Messages wait in `backlogs` for send window.
        var messagesQueued = false
        /// A status or half-close waits in `backlogs` behind those messages.
        var endQueued = false
        /// Server, for a call that came with a deadline: half of it, from the call's start, in monotonic
        /// nanoseconds (see `receive`). A cancel after it tells of the deadline passing (`receiveCancel`); nil for a
        /// call without a deadline.
        var deadlineHalfway: UInt64?

        /// Whether the application may still send messages: not half-closed, no status or half-close queued.
        var acceptsMessages: Bool { !localHalfClosed && !endQueued }
        /// Whether `backlogs` holds an entry for this stream.
        var hasBacklog: Bool { messagesQueued || endQueued }

        /// `byteCount` bytes of message data arrived (the caller checked them against the window).
        mutating func received(_ byteCount: Int) {
            receiveWindow -= byteCount
            unconsumed += byteCount
        }

        /// The application consumed `byteCount` bytes; returns what to grant back to the peer now, if anything
        /// (see `ConnectionStateMachine.consumed`).
        mutating func consumed(_ byteCount: Int, moreExpected: Bool, grantAt threshold: Int) -> Int? {
            consumedSinceUpdate += byteCount
            unconsumed = max(0, unconsumed - byteCount)
            guard moreExpected, !remoteHalfClosed, consumedSinceUpdate >= threshold || unconsumed == 0 else {
                return nil
            }
            let increment = consumedSinceUpdate
            receiveWindow += increment
            consumedSinceUpdate = 0
            return increment
        }
    }

    let role: Role
    let localSettings: ConnectionSettings
    let agent: String
    private(set) var peerSettings = ConnectionSettings.defaults
    /// Whether `peerSettings` are the peer's own (its hello came) rather than the defaults.
    private(set) var peerHelloReceived = false
    private(set) var state: State = .awaitingHello
    /// Client: the code of the error goaway that ended the connection, when the server sent one.
    private(set) var peerGoAwayCode: WireV1.GoAwayCode?
    /// Each event finds its stream once (`streams.index(forKey:)`) and changes it in place through
    /// `streams[slot: index]`. A stream holds only plain values, so the copies the table makes cost no
    /// reference counting; what it queues lives in `backlogs`, which most calls never touch.
    private(set) var streams = StreamTable<Stream>()
    /// Messages waiting for the peer's window, and a status or half-close behind them, for the streams whose
    /// `hasBacklog` is set.
    private var backlogs: [UInt32: Backlog] = [:]

    /// What one stream queued: messages in the order they were sent, and what ends the stream after them.
    struct Backlog {
        var messages: [Data] = []
        var end: WireV1.Frame.Kind?
    }
    /// Client: the id of the next call (settable so that tests can start near the end of the id space).
    var nextStreamID: UInt32 = 1
    /// Server: the highest call id seen so far.
    private(set) var lastPeerStreamID: UInt32 = 0
    /// Server: the calls the peer opened, and of them the ones it cancelled while they ran, in the current block of
    /// `cancelBlock` calls (see `receiveCancel`).
    private var blockCalls = 0
    private var blockCancels = 0
    private var helloSent = false
    /// Server: the draining began with the client's goaway, not this side's. The client closes the connection once
    /// its calls have ended; until then every call_start it still sends is answered UNAVAILABLE, so none is left
    /// without an answer (a server that closed first would leave a call sent after the goaway unanswered). The idle
    /// timer, and this side's own shutdown, still close such a connection.
    private var clientWentAway = false
    /// Server: calls ended before their handler returned (the client cancelled them, or a stream error or this
    /// side's shutdown ended them), until the driver reports that the handler returned (`handlerReturned`).
    /// Cancelling is cooperative, and a handler busy with work it does not interrupt (a database transaction, a call
    /// it waits for) runs on after its stream is gone. Counted only by their streams, a peer that opens and cancels
    /// calls in a loop would start handlers without bound, every one of them taking threads, memory and the database
    /// from the other connections. They get an allowance of `max_concurrent_streams` of their own, so that a client
    /// which cancels calls can open new ones at once, and a connection runs at most twice that many handlers.
    private(set) var handlersOutlivingStreams: Set<UInt32> = []
    /// Server: the status this side answered a call with when it ended the call itself while the handler still
    /// ran (a stream error, the end of a drain, `endCall`), until the handler returns (`handlerReturned`), so that
    /// the call log reports what the caller was told rather than the handler's cancellation.
    private var answeredWhileHandled: [UInt32: WireV1.Status] = [:]

    /// The highest call id: ids are sent as `uint32`, and stay below 2^31 as in HTTP/2, so that a peer which keeps
    /// them in a signed 32-bit integer reads them right.
    static let largestStreamID = UInt32(Int32.max)

    init(role: Role, settings: ConnectionSettings = .defaults, agent: String = "tokenet") {
        precondition(
            settings.maxFrameSize >= ConnectionSettings.minimumMaxFrameSize,
            "a maximum frame size below \(ConnectionSettings.minimumMaxFrameSize) bytes is refused by every peer")
        self.role = role
        self.localSettings = settings
        self.agent = agent
    }

    // MARK: - Opening

    /// The connection is established: send our hello.
    mutating func start() -> Actions {
        guard !helloSent else { return [] }
        helloSent = true
        let hello = WireV1.Hello(
            protocolVersion: ConnectionSettings.protocolVersion,
            settings: localSettings.wire,
            agent: agent
        )
        return Actions(.write(WireV1.Frame(streamID: 0, kind: .hello(hello))))
    }

    // MARK: - Frames from the peer

    /// `now`, monotonic nanoseconds, is read only for what needs the time: a call start with a deadline, and a cancel
    /// of such a call. A plain integer, so that a stream stays a value of fixed size: with a `ContinuousClock.Instant`,
    /// whose layout the standard library keeps to itself, every copy of a stream went through the runtime, and a
    /// served call cost 3.4 k instructions more.
    mutating func receive(
        _ frame: WireV1.Frame, at now: @autoclosure () -> UInt64 = DispatchTime.now().uptimeNanoseconds
    ) -> Actions {
        guard state != .closed else { return [] }
        // Until the peer's hello, whatever the state: a client that began closing before the server's hello came
        // (draining its calls) took that hello for a second one and failed every call.
        if !peerHelloReceived {
            guard case .hello(let hello)? = frame.kind, frame.streamID == 0 else {
                // An unset kind (an empty frame, or a kind from a later version) is ignored everywhere but here: the
                // first frame must be the hello, so anything else before it is refused like any other frame. A hello
                // on another stream is told so: "must be hello" read as if it were none.
                if case .hello? = frame.kind {
                    return connectionError(
                        .protocolError, "the hello came on stream \(frame.streamID); it must be on stream 0")
                }
                return connectionError(.protocolError, "the first frame must be hello")
            }
            return receiveHello(hello)
        }
        // Switched on in place: binding the kind first copied it (a retain and a release of its payload) per frame.
        switch frame.kind {
        case nil:
            return []  // unset or from a later version: ignored
        case .hello?:
            return connectionError(.protocolError, "hello sent twice")
        case .ping(let ping)?:
            return Actions(.write(WireV1.Frame(streamID: 0, kind: .pong(WireV1.Pong(payload: ping.payload)))))
        case .pong(let pong)?:
            return Actions(.pongReceived(payload: pong.payload))
        case .goaway(let goaway)?:
            return receiveGoAway(goaway)
        case .callStart(let start)?:
            return receiveCallStart(frame.streamID, start, at: now)
        case .message(let message)?:
            return receiveMessage(frame.streamID, message.data)
        case .halfClose?:
            return receiveHalfClose(frame.streamID)
        case .status(let status)?:
            return receiveStatus(frame.streamID, status)
        case .cancel?:
            return receiveCancel(frame.streamID, at: now)
        case .windowUpdate(let update)?:
            return receiveWindowUpdate(frame.streamID, Int(update.increment))
        }
    }

    /// The byte stream could not be framed: a length above our maximum, or bytes that are not a `Frame`.
    mutating func receiveUndecodable(_ error: WireError) -> Actions {
        let code: WireV1.GoAwayCode = error.code == .frameTooLarge ? .frameTooLarge : .protocolError
        return connectionError(code, error.message)
    }

    /// A well-formed frame on call `id` held a value Tokenet cannot read (a string with a NUL character, or one that
    /// is not UTF-8; see `FrameDecoder`). Only that call is refused: a server answers a new call's id (the frame was
    /// its start) or ends the open call with INVALID_ARGUMENT; a client cancels its call and fails it with INTERNAL,
    /// since the server sent what this side cannot read. Other calls and the connection carry on. A server refuses
    /// with `code` (RESOURCE_EXHAUSTED for a call_start over the size it reads).
    mutating func receiveUnreadable(
        streamID id: UInt32, reason: String, code: StatusCode = .invalidArgument, opensCall: Bool = true
    ) -> Actions {
        guard state != .closed else { return [] }
        guard peerHelloReceived else { return connectionError(.protocolError, "the first frame must be hello") }
        if streams[id] != nil {
            return role == .server
                ? streamError(id, code, reason)
                : streamError(id, .internal, "the server sent a frame this client cannot read: \(reason)")
        }
        // A frame other than a call_start on an id with no call is ignored, as a readable one is (a cancel that
        // crossed the call's status, or one sent too early); only a call_start opens a call to refuse.
        guard role == .server, opensCall, id % 2 == 1, id > lastPeerStreamID, id <= Self.largestStreamID else {
            return []  // a call already over (or never this side's to answer): nothing is left to refuse
        }
        lastPeerStreamID = id
        return refuse(id, nil, code, reason)
    }

    /// Server: answers new call `id` with a status before any handler starts, and tells the call log.
    private func refuse(_ id: UInt32, _ start: WireV1.CallStart?, _ code: StatusCode, _ message: String) -> Actions {
        let status = WireV1.Status(code: code, message: message)
        return [writeStatus(id, status), .refusedCall(streamID: id, start: start, status)]
    }

    private mutating func receiveHello(_ hello: WireV1.Hello) -> Actions {
        guard hello.protocolVersion >= 1 else {
            let reason =
                "protocol version \(hello.protocolVersion) is not supported; this node speaks "
                + "\(ConnectionSettings.protocolVersion)"
            return connectionError(.unsupportedVersion, reason)
        }
        let maxFrameSize = hello.settings?.maxFrameSize ?? 0
        guard maxFrameSize == 0 || maxFrameSize >= ConnectionSettings.minimumMaxFrameSize else {
            return connectionError(
                .protocolError,
                "max_frame_size \(maxFrameSize) is below the minimum of \(ConnectionSettings.minimumMaxFrameSize) bytes"
            )
        }
        peerSettings = ConnectionSettings(wire: hello.settings)
        peerHelloReceived = true
        // A connection already draining stays so.
        if state == .awaitingHello { state = .active }
        return openWindowsAtHello()
    }

    /// Client: the calls opened before the server's hello held their messages (`sendMessage`), since the window and the
    /// frame size they must respect are the server's, which may be smaller than the defaults: each now gets the
    /// window the hello announced and sends what it holds, or fails when it holds a message the server's limits
    /// can never let through.
    private mutating func openWindowsAtHello() -> Actions {
        guard role == .client, !streams.isEmpty else { return [] }
        var actions: Actions = []
        for id in streams.ids.sorted() {
            guard let index = streams.index(forKey: id) else { continue }
            if let tooLarge = backlogs[id]?.messages.first(where: { $0.count > peerSettings.largestMessage }) {
                actions += streamError(id, .resourceExhausted, oversizedMessage(tooLarge.count))
                continue
            }
            streams[slot: index].sendWindow = peerSettings.initialStreamWindow
            actions += flushPending(id)
        }
        return actions
    }

    /// Why a message of `byteCount` bytes cannot be sent: it names the peer's limit it exceeds, the smaller of its
    /// frame size, less room for the frame's own fields around the data, and its flow-control window, which never
    /// grows past its initial size (a larger message would wait for it forever), so that the person sending knows
    /// how much to cut.
    private func oversizedMessage(_ byteCount: Int) -> String {
        let framed = peerSettings.maxFrameSize - ConnectionSettings.messageFrameOverhead
        let limit =
            framed < peerSettings.initialStreamWindow
            ? "\(framed) bytes (its maximum frame size of \(peerSettings.maxFrameSize), less 64 for the frame)"
            : "\(peerSettings.initialStreamWindow) bytes (its flow-control window)"
        return "a \(byteCount)-byte message is larger than the peer accepts: at most \(limit)"
    }

    private mutating func receiveGoAway(_ goaway: WireV1.GoAway) -> Actions {
        var goaway = goaway
        // The peer's words go into statuses and log lines: a reason of megabytes is cut short, as names are.
        goaway.reason = RPCServer.shown(goaway.reason)
        var actions: Actions = []
        if role == .client {
            let reason = goaway.reason.isEmpty ? "the server is going away" : goaway.reason
            for id in streams.ids.sorted() where id > goaway.lastStreamID {
                removeStream(id)
                actions.append(
                    .refuseCall(
                        streamID: id, message: "\(reason) (call not processed)",
                        peerIsStopping: goaway.code == .shuttingDown))
            }
        }
        if goaway.code != .noError && goaway.code != .shuttingDown {
            // The peer closes after a connection error: every remaining call is lost.
            let reason = goaway.reason.isEmpty ? Self.unexplained(goaway.code) : goaway.reason
            actions += failAllStreams(code: .unavailable, message: "the peer closed the connection: \(reason)")
            state = .closed
            peerGoAwayCode = goaway.code
            // The reason is the peer's text: said to be, so that a log line never reads it as this side's problem.
            let name = goaway.code.protoValueName ?? "code \(goaway.code.rawValue)"
            actions.append(
                .closeConnection(error: goaway.reason.isEmpty ? reason : "the peer sent goaway \(name): \(reason)"))
            return actions
        }
        // A client's goaway: it opens no more calls here, and closes the connection itself once its calls have
        // ended. The server leaves that close to it (see `clientWentAway`).
        if role == .server && state == .active { clientWentAway = true }
        state = .draining
        return actions + closeIfDrained()
    }

    /// What stands for the reason of an error goaway that came without one: its code. The reason goes into the
    /// failed calls' messages and the log line of the close, where an empty one told nobody what went wrong.
    static func unexplained(_ code: WireV1.GoAwayCode) -> String {
        let name = code.protoValueName ?? "code \(code.rawValue)"
        return "goaway \(name) without a reason"
    }

    /// Server: why the connection takes no new calls after the client's own goaway.
    static let clientWentAwayReason = "the client sent goaway: this connection takes no new calls"

    private mutating func receiveCallStart(
        _ id: UInt32, _ start: WireV1.CallStart, at now: () -> UInt64
    ) -> Actions {
        guard role == .server else {
            return connectionError(.protocolError, "a server cannot open calls")
        }
        guard id % 2 == 1, id > lastPeerStreamID, id <= Self.largestStreamID else {
            return connectionError(
                .protocolError,
                "call id \(id) is invalid: ids must be odd, increase (last was \(lastPeerStreamID)) and stay "
                    + "below 2^31"
            )
        }
        lastPeerStreamID = id
        if state == .draining {
            let reason = clientWentAway ? Self.clientWentAwayReason : "the node is shutting down"
            return refuse(id, start, .unavailable, "\(reason); retry on a new connection")
        }
        let limit = localSettings.maxConcurrentStreams
        guard streams.count < limit, streams.count + handlersOutlivingStreams.count < 2 * limit else {
            let stopping =
                streams.count < limit
                ? ", plus \(limit) calls that ended early and whose handlers are still stopping" : ""
            return refuse(id, start, .resourceExhausted, "too many concurrent calls: the limit is \(limit)\(stopping)")
        }
        var stream = Stream(
            sendWindow: peerSettings.initialStreamWindow, receiveWindow: localSettings.initialStreamWindow)
        if let micros = start.timeoutMicros {
            // At least 100 µs: with a deadline of 0 or 1 µs the mark fell on the start itself, and a client that
            // gave every call one cancelled them all uncounted, in the same write as their starts. Saturating: a
            // deadline of 2^64 µs, as good as none, must not trap.
            let half = max(micros / 2, 100).multipliedReportingOverflow(by: 1000)
            let halfway = now().addingReportingOverflow(half.partialValue)
            stream.deadlineHalfway = half.overflow || halfway.overflow ? .max : halfway.partialValue
        }
        streams[id] = stream
        if blockCalls == Self.cancelBlock { (blockCalls, blockCancels) = (0, 0) }
        blockCalls += 1
        return Actions(.startHandler(streamID: id, start))
    }

    private mutating func receiveMessage(_ id: UInt32, _ data: Data) -> Actions {
        guard let index = streams.index(forKey: id) else { return [] }
        if streams[slot: index].remoteHalfClosed {
            return streamError(id, .internal, "message received after the end of requests")
        }
        guard data.count <= streams[slot: index].receiveWindow else {
            return streamError(id, .resourceExhausted, "flow-control window exceeded")
        }
        streams[slot: index].received(data.count)
        return Actions(.deliverMessage(streamID: id, data))
    }

    private mutating func receiveHalfClose(_ id: UInt32) -> Actions {
        guard role == .server, let index = streams.index(forKey: id), !streams[slot: index].remoteHalfClosed else {
            return []
        }
        streams[slot: index].remoteHalfClosed = true
        return Actions(.deliverEndOfRequests(streamID: id))
    }

    private mutating func receiveStatus(_ id: UInt32, _ status: WireV1.Status) -> Actions {
        guard role == .client, removeStream(id) else { return [] }
        return Actions(.finishCall(streamID: id, status)) + closeIfDrained()
    }

    /// Calls are counted in blocks of this many; a peer that cancels more than `cancelLimit` of a block's calls
    /// while they run is cut off.
    static let cancelBlock = 1024
    static let cancelLimit = 896

    /// A peer that opens calls and cancels them at once in a loop ("rapid reset") starts a handler for each, which
    /// the handler allowance bounds in number but not in rate: one such connection kept a node's loop busy and made
    /// other clients' calls wait 100 times longer while it lasted. Cancelling nearly every call of a block of 1,024
    /// (more than 7 in 8) is no client's way of working, and ends the connection; a client that reconnects pays a
    /// handshake for each block. A cancel that tells of a passed deadline does not count: a client tells the server
    /// of one with a cancel, and a server slow enough to let most calls' deadlines pass (a stalled database) cut off
    /// its clients' connections, and every other call on them, as if they had attacked it. Such a cancel comes about
    /// when the call's deadline ends here (the client's started earlier, by the time the call took to arrive), so
    /// one that comes before half of it has passed was the client's choice and counts: with only calls with a
    /// deadline exempt, a client that gave each call an hour cancelled 200,000 of them in 22 s.
    private mutating func receiveCancel(_ id: UInt32, at now: () -> UInt64) -> Actions {
        guard role == .server, let index = streams.index(forKey: id) else { return [] }
        let chosen = streams[slot: index].deadlineHalfway.map { now() < $0 } ?? true
        removeStream(id)
        guard chosen else { return Actions(cancelHandler(id)) + closeIfDrained() }
        blockCancels += 1
        if blockCancels > Self.cancelLimit {
            return Actions(cancelHandler(id))
                + connectionError(
                    .protocolError,
                    "the peer cancelled \(blockCancels) of its last \(blockCalls) calls while they ran, none of them "
                        + "near its deadline: a client that cancels nearly every call it makes costs this side a handler "
                        + "each; cancel fewer calls")
        }
        return Actions(cancelHandler(id)) + closeIfDrained()
    }

    private mutating func receiveWindowUpdate(_ id: UInt32, _ increment: Int) -> Actions {
        guard id != 0, let index = streams.index(forKey: id) else { return [] }
        // A receiver grants back what it took, so the window never grows past its initial size; a grant beyond it is
        // capped there. Added up unchecked, a peer's grants of 4 GiB each would overflow the window, which stops the
        // process, after 2^31 of them.
        let window = streams[slot: index].sendWindow
        streams[slot: index].sendWindow = min(window + increment, max(window, peerSettings.initialStreamWindow))
        return flushPending(id)
    }

    // MARK: - Calls, from the application

    /// Client: opens a call. Throws `UNAVAILABLE` when the connection no longer accepts calls.
    mutating func openCall(_ start: WireV1.CallStart) throws(RPCError) -> (streamID: UInt32, actions: Actions) {
        precondition(role == .client, "only a client opens calls")
        switch state {
        case .draining, .closed:
            // Never sent, as the callers that tell a sent call from an unsent one need to know (`callWasNeverSent`).
            let message = "the connection is closing; retry on a new connection"
            throw RPCError(.unavailable, message, cause: NotConnected(reason: message, connectionWasClosing: true))
        case .awaitingHello, .active:
            break
        }
        guard nextStreamID <= Self.largestStreamID else {
            let message = "call ids are exhausted on this connection; retry on a new connection"
            throw RPCError(.unavailable, message, cause: NotConnected(reason: message, connectionWasClosing: true))
        }
        // A frame over the peer's limit ends the whole connection there: refuse this call alone, here.
        let size = Self.callStartSizeBound(start)
        guard size <= peerSettings.maxFrameSize else {
            throw RPCError(
                .resourceExhausted,
                "the call's method and metadata take up to \(size) bytes, more than the peer's maximum frame size of "
                    + "\(peerSettings.maxFrameSize) bytes; send less metadata")
        }
        let id = nextStreamID
        nextStreamID += 2
        // Before the server's hello its messages wait (`sendMessage`, `openWindowsAtHello`): the server may announce
        // a window or a frame size below the defaults, and enforces its own from the first byte.
        streams[id] = Stream(
            sendWindow: peerSettings.initialStreamWindow, receiveWindow: localSettings.initialStreamWindow)
        var actions = Actions(.write(WireV1.Frame(streamID: id, kind: .callStart(start))))
        if nextStreamID > Self.largestStreamID {
            // That was the last id: the connection drains (its calls finish, then it closes) and stops counting as
            // usable, so a channel opens a new one for the next call instead of failing every call from now on.
            actions += beginShutdown(reason: "call ids are exhausted on this connection")
        }
        return (id, actions)
    }

    /// At least the encoded size of the frame carrying `start`: its strings and bytes, plus the most each field's tag
    /// and length prefix can take. Cheaper than encoding it, and close enough to compare with a frame limit, which
    /// is at least 16 KiB (`ConnectionSettings.minimumMaxFrameSize`).
    static func callStartSizeBound(_ start: WireV1.CallStart) -> Int {
        // Frame: stream id, kind; call_start: method, timeout. Each at most a tag byte and a 10-byte varint.
        var size = 4 * 11 + start.method.utf8.count
        for entry in start.metadata { size += entry.encodedSizeBound }
        return size
    }

    /// Sends one request (client) or response (server) message.
    mutating func sendMessage(_ id: UInt32, _ data: Data) -> Actions {
        guard let index = streams.index(forKey: id), streams[slot: index].acceptsMessages else { return [] }
        // Before the server's hello its limits are unknown (they may be above the defaults): the size is checked
        // against them when it comes (`openWindowsAtHello`).
        guard !peerHelloReceived || data.count <= peerSettings.largestMessage else {
            return streamError(id, .resourceExhausted, oversizedMessage(data.count))
        }
        // Before the server's hello even an empty message waits (`openWindowsAtHello`), in its place in the order.
        if !streams[slot: index].messagesQueued, peerHelloReceived, data.count <= streams[slot: index].sendWindow {
            streams[slot: index].sendWindow -= data.count
            return Actions(.write(WireV1.Frame(streamID: id, kind: .message(WireV1.Message(data: data)))))
        }
        streams[slot: index].messagesQueued = true
        backlogs[id, default: Backlog()].messages.append(data)
        return []
    }

    /// How many bytes of message data may be written on `id` now, in order, without going through `sendMessage`'s
    /// queue: the driver packs a message of at most this size straight into its frame, then reports it with
    /// `sentDirectly`. Nil when every message must take `sendMessage` (call over or half-closed, messages queued);
    /// a larger message takes it too (to wait for window, or to fail the call when it exceeds the peer's frames).
    func directSendAllowance(_ id: UInt32) -> Int? {
        guard let index = streams.index(forKey: id), streams[slot: index].acceptsMessages,
            !streams[slot: index].messagesQueued, peerHelloReceived
        else { return nil }
        return max(0, min(streams[slot: index].sendWindow, peerSettings.maxFrameSize - 64))
    }

    /// A message of `byteCount` bytes (at most `directSendAllowance`) was written on `id` by the driver.
    mutating func sentDirectly(_ id: UInt32, byteCount: Int) {
        guard let index = streams.index(forKey: id) else { return }
        precondition(byteCount <= streams[slot: index].sendWindow, "sent \(byteCount) bytes beyond the window")
        streams[slot: index].sendWindow -= byteCount
    }

    /// Bytes of message data waiting for the peer to grant window on a call.
    func pendingBytes(_ id: UInt32) -> Int {
        backlogs[id]?.messages.reduce(0) { $0 + $1.count } ?? 0
    }

    /// Client: no more requests.
    mutating func sendEndOfRequests(_ id: UInt32) -> Actions {
        guard role == .client, let index = streams.index(forKey: id), streams[slot: index].acceptsMessages else {
            return []
        }
        if streams[slot: index].messagesQueued {
            streams[slot: index].endQueued = true
            backlogs[id, default: Backlog()].end = .halfClose(WireV1.HalfClose())
            return []
        }
        streams[slot: index].localHalfClosed = true
        return Actions(.write(WireV1.Frame(streamID: id, kind: .halfClose(WireV1.HalfClose()))))
    }

    /// Server: ends the call with a status, after any response messages still waiting for window.
    mutating func sendStatus(_ id: UInt32, _ status: WireV1.Status) -> Actions {
        guard role == .server, let index = streams.index(forKey: id), !streams[slot: index].endQueued else {
            return []
        }
        if streams[slot: index].messagesQueued, status.code == .ok {
            streams[slot: index].endQueued = true
            backlogs[id, default: Backlog()].end = .status(status)
            return []
        }
        if streams.remove(at: index).hasBacklog { backlogs[id] = nil }
        return Actions(writeStatus(id, status)) + closeIfDrained()
    }

    /// Client: abandons a call.
    mutating func cancelCall(_ id: UInt32, reason: String = "cancelled by the client") -> Actions {
        guard role == .client, removeStream(id) else { return [] }
        return [
            writeCancel(id, reason),
            .failCall(streamID: id, code: .cancelled, message: reason),
        ] + closeIfDrained()
    }

    /// The application consumed `byteCount` bytes of received message data: grant them back to the peer once half
    /// the window is used, so window updates stay few, and also when the application has consumed everything the
    /// peer sent while the peer may send more. Without the second rule a peer could wait for good: after a 0.4 MiB
    /// message, 0.4 MiB consumed is not yet half of a 1 MiB window, and a 0.7 MiB message does not fit in the 0.6
    /// MiB left. A consumer that keeps up grants once per batch of messages it catches up with, not per message.
    ///
    /// `moreExpected: false` says the peer sends no further message on this call (the request of a unary or
    /// server-streaming call, the response of a unary or client-streaming one): nothing to grant for.
    mutating func consumed(_ id: UInt32, byteCount: Int, moreExpected: Bool = true) -> Actions {
        guard byteCount > 0, let index = streams.index(forKey: id),
            let increment = streams[slot: index].consumed(
                byteCount, moreExpected: moreExpected, grantAt: localSettings.initialStreamWindow / 2)
        else { return [] }
        let update = WireV1.WindowUpdate(increment: UInt32(clamping: increment))
        return Actions(.write(WireV1.Frame(streamID: id, kind: .windowUpdate(update))))
    }

    /// Server: the handler of call `id` returned. A call that ended before it no longer counts against
    /// `max_concurrent_streams` (see `handlersOutlivingStreams`). Returns the status this side answered the call
    /// with when it ended the call itself; nil when the call ended otherwise (a cancel, a lost connection).
    @discardableResult
    mutating func handlerReturned(_ id: UInt32) -> WireV1.Status? {
        if !handlersOutlivingStreams.isEmpty { handlersOutlivingStreams.remove(id) }
        guard !answeredWhileHandled.isEmpty else { return nil }
        return answeredWhileHandled.removeValue(forKey: id)
    }

    // MARK: - Connection, from the application

    mutating func ping(payload: UInt64) -> Actions {
        guard state != .closed else { return [] }
        return Actions(.write(WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: payload)))))
    }

    /// Graceful shutdown: announce the last call that will be processed, let running calls finish, then close.
    /// Without a `reason`, the goaway says which side is going: a server's node is shutting down, while a client
    /// (the CLI when it is done, a node's outgoing connection) only closes this connection — a peer reading the
    /// goaway, or a capture of it, should not take a finished client for a node going down.
    mutating func beginShutdown(reason: String? = nil) -> Actions {
        let reason = reason ?? (role == .server ? "the node is shutting down" : "the client is closing this connection")
        switch state {
        case .closed,
            .draining where !clientWentAway:
            return []
        case .awaitingHello, .active, .draining:
            state = .draining
            clientWentAway = false
            let lastProcessed = role == .server ? lastPeerStreamID : 0
            let goaway = WireV1.GoAway(lastStreamID: lastProcessed, code: .shuttingDown, reason: reason)
            return Actions(writeGoAway(goaway)) + closeIfDrained()
        }
    }

    /// Server: ends call `id` now with `status` and stops its handler. For a stream that would outlive any drain
    /// (a subscription): a client told to go away only opens its next stream elsewhere once this one has ended.
    mutating func endCall(_ id: UInt32, _ status: WireV1.Status) -> Actions {
        guard role == .server, removeStream(id) else { return [] }
        return [cancelHandler(id, answered: status), writeStatus(id, status)] + closeIfDrained()
    }

    /// The drain period is over: every call still open ends — the server answers it UNAVAILABLE with `reason`, the
    /// client cancels it — and the connection closes. A call that waits for a peer which never sends (a request
    /// without its half-close, a stream nobody ends) would otherwise hold the connection, and the node, forever.
    mutating func drainTimedOut(reason: String) -> Actions {
        var actions = beginShutdown()
        guard state != .closed else { return actions }
        for id in streams.ids.sorted() {
            removeStream(id)
            switch role {
            case .server:
                let status = WireV1.Status(code: .unavailable, message: reason)
                actions += [cancelHandler(id, answered: status), writeStatus(id, status)]
            case .client:
                actions += [
                    writeCancel(id, reason),
                    .failCall(streamID: id, code: .unavailable, message: reason),
                ]
            }
        }
        state = .closed
        actions.append(.closeConnection(error: nil))
        return actions
    }

    /// The peer's hello did not arrive in time (`RPCConnection.helloTimeout`): whatever answered the connection
    /// does not speak Tokenet, or hangs. Without this a call without a deadline would wait for it forever.
    mutating func helloTimedOut(after description: String) -> Actions {
        guard !peerHelloReceived, state != .closed else { return [] }
        return connectionError(
            .protocolError, "no hello from the peer within \(description): it does not speak Tokenet, or it hangs")
    }

    /// The peer keeps sending while it reads nothing: `queuedBytes` of frames this side owes it (pongs, statuses of
    /// the calls it keeps opening) wait behind a write it does not take. Such frames are written without waiting
    /// for room, so the connection ends here instead of holding more for a peer that may never read.
    mutating func peerStoppedReading(queuedBytes: Int) -> Actions {
        connectionError(
            .protocolError,
            "the peer keeps sending but reads nothing: \(queuedBytes) bytes of frames wait for it")
    }

    /// Across its connections the server holds more than its budget of frames waiting for peers that read nothing,
    /// and this connection's peer has left `queuedBytes` unread while it keeps sending (see `ByteBudget`).
    mutating func unreadBudgetExceeded(queuedBytes: Int, limit: Int) -> Actions {
        connectionError(
            .protocolError,
            "the peer keeps sending but reads too little: \(queuedBytes) bytes of frames wait for it, and this side "
                + "holds more than \(limit) bytes for peers that read nothing")
    }

    /// Across its connections the server holds more than its budget of unfinished frames, and this connection's
    /// frame of `heldBytes` so far adds to them (see `ByteBudget`).
    mutating func inboundBudgetExceeded(heldBytes: Int, limit: Int) -> Actions {
        connectionError(
            .protocolError,
            "this side holds more than \(limit) bytes of unfinished frames from its peers; the \(heldBytes) bytes "
                + "of this connection's frame so far are dropped")
    }

    /// The peer sent more frames that do no work (pings, pongs, empty frames) than `limit` allows
    /// (`WorkFreeFrameAllowance`): a peer that floods them keeps this side busy for nothing, and its other peers
    /// waiting.
    mutating func workFreeFramesExceeded(limit: String) -> Actions {
        connectionError(
            .protocolError,
            "the peer sent more frames that do no work (pings, pongs, empty frames) than this side allows: \(limit)")
    }

    /// A frame began to arrive and is still not whole after `description` (`ConnectionTimers.frameTimeout`).
    mutating func frameTimedOut(after description: String) -> Actions {
        connectionError(.protocolError, "a frame that began to arrive \(description) ago is still incomplete")
    }

    /// The keepalive timer found no pong in time. A peer that never sent its hello either is said to: whatever took
    /// the connection does not speak Tokenet, or is stuck.
    mutating func keepaliveTimedOut() -> Actions {
        let silence = "no answer to keepalive ping"
        let reason = peerHelloReceived ? silence : "no hello from the peer, and \(silence)"
        return connectionError(.keepaliveTimeout, reason)
    }

    /// The idle timer fired: a connection with no open call closes; one with calls carries on. A peer that has not
    /// sent its hello by then is told so: as the hello timer would (PROTOCOL_ERROR) when `helloDue`, that is when a
    /// hello timeout no longer than the idle one is set (with the two equal, the idle goaway won and named a quiet
    /// connection where the peer had broken the protocol); otherwise with the idle goaway, which says it too (a hello
    /// timeout may be off for loaded, honest clients).
    mutating func idleTimedOut(after description: String, helloDue: Bool = false) -> Actions {
        if state == .awaitingHello, helloDue { return helloTimedOut(after: description) }
        guard streams.isEmpty, state == .active || state == .awaitingHello || clientWentAway else { return [] }
        let goaway = WireV1.GoAway(
            lastStreamID: lastPeerStreamID,
            code: .idleTimeout,
            reason: "no calls for \(description)\(state == .awaitingHello ? " (and no hello from the peer)" : "")"
        )
        state = .closed
        return [writeGoAway(goaway), .closeConnection(error: nil)]
    }

    /// Server: the peer already holds as many connections as the server allows one identity. The connection ends
    /// at once with `reason` (after the hello `start()` queued, so the peer can read the goaway that follows it).
    mutating func tooManyConnections(reason: String) -> Actions {
        connectionError(.tooManyConnections, reason)
    }

    /// Whether any call is open, for the idle timer.
    var hasOpenCalls: Bool { !streams.isEmpty }

    /// The transport is gone (EOF, reset, TLS failure): every open call ends.
    mutating func transportClosed(reason: String) -> Actions {
        guard state != .closed else { return [] }
        state = .closed
        return failAllStreams(code: .unavailable, message: "connection lost: \(reason)")
    }

    // MARK: - Helpers

    private mutating func flushPending(_ id: UInt32) -> Actions {
        guard let index = streams.index(forKey: id), streams[slot: index].hasBacklog,
            var backlog = backlogs.removeValue(forKey: id)
        else { return [] }
        var actions: Actions = []
        while let next = backlog.messages.first, next.count <= streams[slot: index].sendWindow {
            backlog.messages.removeFirst()
            streams[slot: index].sendWindow -= next.count
            actions.append(.write(WireV1.Frame(streamID: id, kind: .message(WireV1.Message(data: next)))))
        }
        guard backlog.messages.isEmpty else {
            backlogs[id] = backlog
            return actions
        }
        streams[slot: index].messagesQueued = false
        if let end = backlog.end {
            streams[slot: index].endQueued = false
            switch end {
            case .status(let status): actions += sendStatus(id, status)
            default: actions += sendEndOfRequests(id)
            }
        }
        return actions
    }

    private func writeStatus(_ id: UInt32, _ code: StatusCode, _ message: String) -> Action {
        writeStatus(id, WireV1.Status(code: code, message: message))
    }

    /// Every status leaves through here: cut, when it must be, to fit in a frame the peer accepts (a status above the
    /// peer's `max_frame_size` would end the whole connection there).
    private func writeStatus(_ id: UInt32, _ status: WireV1.Status) -> Action {
        .write(WireV1.Frame(streamID: id, kind: .status(status.fitting(inFrameOf: peerFrameLimit))))
    }

    /// Client: the cancel of call `id`, its reason cut to fit the peer's frames (an application's reason can be long).
    private func writeCancel(_ id: UInt32, _ reason: String) -> Action {
        let cancel = WireV1.Cancel(reason: reason).fitting(inFrameOf: peerFrameLimit)
        return .write(WireV1.Frame(streamID: id, kind: .cancel(cancel)))
    }

    /// A goaway, its reason cut to fit the peer's frames.
    private func writeGoAway(_ goaway: WireV1.GoAway) -> Action {
        .write(WireV1.Frame(streamID: 0, kind: .goaway(goaway.fitting(inFrameOf: peerFrameLimit))))
    }

    /// The largest frame the peer is sure to take: what its hello announced, and before its hello the floor every
    /// peer must accept (a goaway can go out before the peer has said anything).
    private var peerFrameLimit: Int {
        peerHelloReceived ? peerSettings.maxFrameSize : ConnectionSettings.minimumMaxFrameSize
    }

    /// Server: stops the handler of call `id`, whose stream has ended; it counts as running until it returns.
    private mutating func cancelHandler(_ id: UInt32, answered status: WireV1.Status? = nil) -> Action {
        handlersOutlivingStreams.insert(id)
        if let status { answeredWhileHandled[id] = status }
        return .cancelHandler(streamID: id)
    }

    /// An error confined to one call: the server ends it with a status, the client cancels it.
    private mutating func streamError(_ id: UInt32, _ code: StatusCode, _ message: String) -> Actions {
        removeStream(id)
        switch role {
        case .server:
            let status = WireV1.Status(code: code, message: message)
            return [cancelHandler(id, answered: status), writeStatus(id, status)] + closeIfDrained()
        case .client:
            return [
                writeCancel(id, message),
                .failCall(streamID: id, code: code, message: message),
            ] + closeIfDrained()
        }
    }

    /// An error that ends the connection: goaway with the reason, fail or cancel every call, close.
    private mutating func connectionError(_ code: WireV1.GoAwayCode, _ reason: String) -> Actions {
        guard state != .closed else { return [] }
        let goaway = WireV1.GoAway(lastStreamID: lastPeerStreamID, code: code, reason: reason)
        var actions: Actions = [writeGoAway(goaway)]
        actions += failAllStreams(code: .unavailable, message: "connection closed: \(reason)")
        state = .closed
        actions.append(.closeConnection(error: reason))
        return actions
    }

    private mutating func failAllStreams(code: StatusCode, message: String) -> Actions {
        let ids = streams.ids.sorted()
        streams.removeAll()
        backlogs.removeAll()
        let role = role
        return Actions(
            ids.lazy.map { id in
                role == .server ? .cancelHandler(streamID: id) : .failCall(streamID: id, code: code, message: message)
            })
    }

    /// Removes a stream and whatever it queued; false when it was not open.
    @discardableResult
    private mutating func removeStream(_ id: UInt32) -> Bool {
        guard let stream = streams.removeValue(forKey: id) else { return false }
        if stream.hasBacklog { backlogs[id] = nil }
        return true
    }

    private mutating func closeIfDrained() -> Actions {
        guard state == .draining, streams.isEmpty, !clientWentAway else { return [] }
        state = .closed
        return Actions(.closeConnection(error: nil))
    }
}
