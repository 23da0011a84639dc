/// The bookkeeping of one connection (TLS, or plaintext through a pass-through engine), free of sockets and
/// OpenSSL: which phase it is in, what the event loop should watch for, when a waiting reader or writer can proceed,
/// and when the socket can be closed.
///
/// The driver (`ConnectionDriver`) reports events and performs the returned actions in order. Byte counts are
/// reported by the driver; the machine decides with them:
/// - outbound backpressure: writers are admitted only while less than `outboundHighWater` bytes of ciphertext
///   wait for the socket, so a peer that stops reading makes writers wait instead of growing memory;
/// - inbound backpressure: the socket is not read while `inboundHighWater` bytes of plaintext wait for a reader.
struct ConnectionStateMachine {
    enum Phase: Equatable {
        /// TCP connect in progress (clients only).
        case connecting
        case handshaking
        case open
        /// A close_notify is queued or sent; the socket closes once the outbound buffer is flushed.
        case closing
        case closed
    }

    struct Limits: Equatable, Sendable {
        var outboundHighWater: Int
        var inboundHighWater: Int

        static let `default` = Limits(outboundHighWater: 256 * 1024, inboundHighWater: 256 * 1024)
    }

    enum Action: Equatable {
        case setInterest(Interest)
        case driveHandshake
        /// The handshake finished: hand the connection to its owner.
        case reportEstablished
        /// Decrypt buffered ciphertext into the inbound plaintext queue.
        case decrypt
        /// Give all queued plaintext to the waiting reader.
        case deliverToReader
        /// Resume the waiting reader with end-of-stream.
        case finishReader
        case failReader(TransportError)
        /// Move bytes of waiting writers into the TLS engine while the outbound buffer has room.
        case admitWrites
        case failWriters(TransportError)
        case sendCloseNotify
        /// Close the socket cleanly (after a flushed close_notify or a completed close).
        case closeSocket
        /// Shut the socket's write half (a TCP FIN) now that what was written is sent; reading goes on.
        case shutdownSocketWrite
        /// Fail everything still waiting with the error, send what can be sent without blocking, close the socket.
        case fail(TransportError)
        /// Fail the write just queued with the error, and none before it (a write after this side's end of stream).
        case refuseNewestWriter(TransportError)
    }

    private(set) var phase: Phase
    private(set) var interest = Interest.none
    private(set) var error: TransportError?
    let limits: Limits
    private var inboundBuffered = 0
    private var outboundBuffered = 0
    private var readerWaiting = false
    private var writersWaiting = false
    /// The peer's close_notify was received: nothing more will arrive.
    private var peerFinished = false
    /// Whether the peer's end of stream leaves this side open for writing until it ends its own
    /// (`shutdownWriteRequested`): a TCP half-close, which a proxy must carry on so that the answer a client waits for
    /// after shutting down its writes still reaches it. Without it the peer's end closes the connection.
    let halfClose: Bool
    /// This side's end of stream: none asked for, waiting for what is buffered to be sent, or sent.
    private var writeShutdown = WriteShutdown.none

    enum WriteShutdown { case none, pending, done }

    init(phase: Phase, limits: Limits = .default, halfClose: Bool = false) {
        precondition(phase == .connecting || phase == .handshaking, "a connection starts connecting or handshaking")
        self.phase = phase
        self.limits = limits
        self.halfClose = halfClose
    }

    /// The interest to register the socket with initially.
    mutating func start() -> [Action] {
        updateInterest([])
    }

    /// The socket is registered with the loop. An accepted socket is connected already, so its handshake starts
    /// now: a TLS engine then waits for the ClientHello, a pass-through engine is established at once.
    mutating func registered() -> [Action] {
        phase == .handshaking ? [.driveHandshake] : []
    }

    // MARK: Socket and TLS events

    mutating func tcpConnected() -> [Action] {
        guard phase == .connecting else { return [] }
        phase = .handshaking
        return updateInterest([.driveHandshake])
    }

    /// Ciphertext (or end-of-file, which the engine turns into an error or a close) was fed to the engine.
    mutating func ciphertextArrived(endOfFile: Bool = false) -> [Action] {
        switch phase {
        case .handshaking: return [.driveHandshake]
        // A half-closed connection reads its peer's end once, then stops reading: another end of file comes only
        // from a wake-up for an error or a hang-up (the peer reset it after closing), which epoll reports on every
        // pass whatever the interest. Taken as the first was, it changed nothing and the loop spun.
        case .open where endOfFile && peerFinished: return failed(Self.closedByPeer)
        case .open: return [.decrypt]
        case .closing: return endOfFile ? close() : []
        case .connecting, .closed: return []
        }
    }

    mutating func handshakeCompleted() -> [Action] {
        guard phase == .handshaking else { return [] }
        phase = .open
        // Application data may have arrived in the same flight as the peer's Finished.
        return updateInterest([.reportEstablished, .decrypt])
    }

    /// The engine holds `total` bytes of decrypted data not yet given to the reader.
    mutating func plaintextBuffered(total: Int) -> [Action] {
        inboundBuffered = total
        var actions: [Action] = []
        if readerWaiting && total > 0 {
            readerWaiting = false
            inboundBuffered = 0
            actions.append(.deliverToReader)
        }
        return updateInterest(actions)
    }

    /// `buffered` bytes of ciphertext wait for the socket; `writersWaiting` tells whether writers are queued.
    mutating func outboundChanged(buffered: Int, writersWaiting: Bool) -> [Action] {
        outboundBuffered = buffered
        self.writersWaiting = writersWaiting
        var actions: [Action] = []
        switch phase {
        case .open where writersWaiting && buffered < limits.outboundHighWater:
            actions.append(.admitWrites)
        case .closing where buffered == 0:
            return close()
        default:
            break
        }
        // Only while a shutdown waits: this runs on every write, where a concatenation would copy `actions`.
        if writeShutdown == .pending { actions += shutdownWriteIfSent() }
        return updateInterest(actions)
    }

    /// The peer's close_notify (or end of stream) arrived: finish the reader once the queue is drained, and answer
    /// with our own; with `halfClose`, writes go on instead until this side ends its stream too.
    mutating func peerClosed() -> [Action] {
        guard !peerFinished else { return [] }
        peerFinished = true
        var actions: [Action] = []
        if readerWaiting && inboundBuffered == 0 {
            readerWaiting = false
            actions.append(.finishReader)
        }
        if phase == .open && halfClose {
            // Writes go on until this side ends its stream too; if it has, nothing is left to carry.
            return writeShutdown == .done ? actions + close() : updateInterest(actions)
        }
        if phase == .open {
            phase = .closing
            writersWaiting = false
            actions += [.failWriters(Self.closedByPeer), .sendCloseNotify]
        }
        return updateInterest(actions)
    }

    mutating func failed(_ error: TransportError) -> [Action] {
        guard phase != .closed else { return [] }
        phase = .closed
        self.error = error
        readerWaiting = false
        writersWaiting = false
        return updateInterest([.fail(error)])
    }

    // MARK: Requests from the owner

    mutating func readRequested() -> [Action] {
        if inboundBuffered > 0 {
            inboundBuffered = 0
            return updateInterest([.deliverToReader])
        }
        if peerFinished { return [.finishReader] }
        switch phase {
        case .closed, .closing:
            return [.failReader(error ?? Self.closedLocally)]
        case .connecting, .handshaking, .open:
            readerWaiting = true
            return []
        }
    }

    /// The waiting reader withdrew (its task was cancelled); data arriving later stays queued.
    mutating func readCancelled() -> [Action] {
        readerWaiting = false
        return []
    }

    /// Whether this side's end of stream is sent: a second `shutdownWrite` has nothing to wait for.
    var writeShutdownSent: Bool { writeShutdown == .done }

    mutating func writeRequested() -> [Action] {
        switch phase {
        case .open where writeShutdown != .none:
            // Only this write: the ones queued before still go out, ahead of the end (failing them all cut a
            // message short before a clean end of stream).
            return [.refuseNewestWriter(Self.closedLocally)]
        case .open:
            writersWaiting = true
            return outboundBuffered < limits.outboundHighWater ? [.admitWrites] : []
        case .closing:
            return [.failWriters(peerFinished ? Self.closedByPeer : Self.closedLocally)]
        case .closed:
            // After the peer's orderly close, a write names that close, not this side's answer to it: the owner may
            // not have read the end of the stream yet, and "closed locally" would tell it the wrong story.
            return [.failWriters(error ?? (peerFinished ? Self.closedByPeer : Self.closedLocally))]
        case .connecting, .handshaking:
            return [.failWriters(TransportError(.invalidState, "write before the TLS handshake completed"))]
        }
    }

    mutating func closeRequested() -> [Action] {
        switch phase {
        case .connecting, .handshaking:
            return failed(TransportError(.connectionClosed, "connection closed before the TLS handshake completed"))
        case .open:
            phase = .closing
            var actions: [Action] = []
            if readerWaiting {
                readerWaiting = false
                actions.append(.failReader(Self.closedLocally))
            }
            if writersWaiting {
                writersWaiting = false
                actions.append(.failWriters(Self.closedLocally))
            }
            return updateInterest(actions + [.sendCloseNotify])
        case .closing, .closed:
            return []
        }
    }

    /// The owner ends this side's stream while still reading: the socket's write half is shut once every byte
    /// written before is sent (a TCP FIN after the data), and later writes fail.
    mutating func shutdownWriteRequested() -> [Action] {
        guard phase == .open else { return [] }
        if writeShutdown == .none { writeShutdown = .pending }
        return shutdownWriteIfSent()
    }

    /// The task waiting for the connection to be established was cancelled: an attempt not yet established ends
    /// with `.cancelled`; an established connection belongs to its owner now and is left alone.
    mutating func abandoned() -> [Action] {
        switch phase {
        case .connecting, .handshaking:
            return failed(Self.attemptCancelled)
        case .open, .closing, .closed:
            return []
        }
    }

    /// Handshake or close deadline passed. The two errors of an attempt tell its stages apart: nothing answered the
    /// TCP connect (a host that is down, a firewall that drops packets), or the connection was made and the peer
    /// never finished the handshake.
    mutating func timedOut() -> [Action] {
        switch phase {
        case .connecting:
            return failed(.connectTimedOut)
        case .handshaking:
            return failed(.handshakeTimedOut)
        case .closing:
            return close()
        case .open, .closed:
            return []
        }
    }

    // MARK: Helpers

    static let closedLocally = TransportError.closedLocally
    static let attemptCancelled = TransportError(.cancelled, "the connection attempt was cancelled")
    static let closedByPeer = TransportError.closedByPeer

    private mutating func close() -> [Action] {
        phase = .closed
        var actions: [Action] = []
        if readerWaiting {
            readerWaiting = false
            actions.append(peerFinished ? .finishReader : .failReader(Self.closedLocally))
        }
        return updateInterest(actions + [.closeSocket])
    }

    /// Shuts the write half once a requested end of stream has nothing left to wait for; closes the connection if
    /// the peer's stream has ended as well.
    private mutating func shutdownWriteIfSent() -> [Action] {
        guard phase == .open, writeShutdown == .pending, outboundBuffered == 0, !writersWaiting else { return [] }
        writeShutdown = .done
        return peerFinished ? [.shutdownSocketWrite] + close() : [.shutdownSocketWrite]
    }

    /// Appends `.setInterest` when the wanted interest differs from the registered one.
    private mutating func updateInterest(_ actions: [Action]) -> [Action] {
        let wanted = wantedInterest
        guard wanted != interest else { return actions }
        interest = wanted
        // Teardown removes the registration; no interest change is needed once closed.
        return phase == .closed ? actions : [.setInterest(wanted)] + actions
    }

    private var wantedInterest: Interest {
        switch phase {
        case .connecting:
            return .writeOnly
        case .handshaking:
            return Interest(read: true, write: outboundBuffered > 0)
        case .open:
            return Interest(
                read: !peerFinished && inboundBuffered < limits.inboundHighWater, write: outboundBuffered > 0)
        case .closing:
            return Interest(read: false, write: outboundBuffered > 0)
        case .closed:
            return .none
        }
    }
}
