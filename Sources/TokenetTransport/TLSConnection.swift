/// An established, mutually authenticated TLS connection driven by an `EventLoop` (reading, writing, closing and
/// backpressure: `EventLoopConnection`). Its stream ends normally at the peer's close_notify; a stream cut without
/// one fails the read with `.unexpectedEOF`.
public final class TLSConnection: EventLoopConnection, @unchecked Sendable {
    public struct Options: Sendable {
        /// Ciphertext waiting for the socket above which writers wait.
        public var outboundHighWater: Int
        /// Decrypted bytes waiting for a reader above which the socket is no longer read.
        public var inboundHighWater: Int
        /// Deadline for the TCP connect plus the TLS handshake.
        public var handshakeTimeout: Duration

        public init(
            outboundHighWater: Int = 256 * 1024, inboundHighWater: Int = 256 * 1024,
            handshakeTimeout: Duration = .seconds(10)
        ) {
            self.outboundHighWater = outboundHighWater
            self.inboundHighWater = inboundHighWater
            self.handshakeTimeout = handshakeTimeout
        }

        var limits: ConnectionStateMachine.Limits {
            .init(outboundHighWater: max(1, outboundHighWater), inboundHighWater: max(1, inboundHighWater))
        }
    }

    /// The verified identity of the other end.
    public let peer: PeerIdentity

    init(peer: PeerIdentity, driver: LoopBound<ConnectionDriver>) {
        self.peer = peer
        super.init(driver: driver)
    }

    /// Connects to host:port (an IPv4 or IPv6 address, "localhost", or a host name looked up first: `HostResolver`)
    /// and completes the TLS handshake. Throws `TransportError`. With TLS 1.3 a server's refusal of our certificate
    /// may only surface on the first `read`. Cancelling the calling task ends an attempt not yet established with
    /// `.cancelled`, so a caller's deadline holds even against a peer that accepts the connection and never answers
    /// the handshake.
    public static func connect(
        host: String, port: UInt16, context: TLSContext, on loop: EventLoop, options: Options = Options()
    ) async throws -> TLSConnection {
        guard context.configuration.side == .client else {
            throw TransportError(.configuration, "TLSConnection.connect needs a client TLSContext")
        }
        let addresses = try await HostResolver.addresses(of: host, within: options.handshakeTimeout)
        return try await ConnectTargets.first(of: addresses) { address in
            try await ConnectAttempt.connect(on: loop) { resume throws(TransportError) in
                let engine = try TLSEngine(context: context)
                let fd = try Socket.startConnect(host: address, port: port)
                return ConnectionDriver.launch(
                    loop: loop, fd: fd, engine: engine, connecting: true, limits: options.limits,
                    handshakeTimeout: options.handshakeTimeout
                ) { result in
                    resume(result.flatMap(TLSConnection.established))
                }
            }
        }
    }

    /// Wraps an established driver; a TLS engine always reports a verified peer, so a missing one is refused.
    static func established(
        _ launched: (LoopBound<ConnectionDriver>, PeerIdentity?)
    ) -> Result<TLSConnection, TransportError> {
        guard let peer = launched.1 else {
            launched.0.loop.execute { [driver = launched.0] in driver.value.close(nil) }
            return .failure(TransportError(.peerIdentity, "TLS connection established without a peer identity"))
        }
        return .success(TLSConnection(peer: peer, driver: launched.0))
    }

    static func stopped(_ loop: EventLoop) -> TransportError {
        ConnectionHandle.stopped(loop)
    }
}
