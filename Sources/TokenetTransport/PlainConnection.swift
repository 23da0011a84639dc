/// A plaintext TCP connection driven by an `EventLoop`: the same driver, bounded buffers and backpressure as
/// `TLSConnection` (`EventLoopConnection`), with no encryption and no peer identity. For local debugging only
/// (`--plaintext`).
///
/// Without TLS there is no close_notify, so the peer's TCP end-of-file ends the stream normally (`read` returns nil)
/// and, as a close_notify does for TLS, closes the connection: later writes fail with `.connectionClosed`. With
/// `Options.halfClose` it ends only the peer's stream instead, and this side writes on until `shutdownWrite()`.
public final class PlainConnection: EventLoopConnection, @unchecked Sendable {
    public struct Options: Sendable {
        /// Bytes waiting for the socket above which writers wait.
        public var outboundHighWater: Int
        /// Received bytes waiting for a reader above which the socket is no longer read.
        public var inboundHighWater: Int
        /// Deadline for the TCP connect.
        public var connectTimeout: Duration
        /// Whether the peer's end of stream leaves the connection open for writing (a TCP half-close): a proxy
        /// must still deliver the answer a client waits for after shutting down its writes.
        public var halfClose: Bool

        public init(
            outboundHighWater: Int = 256 * 1024, inboundHighWater: Int = 256 * 1024,
            connectTimeout: Duration = .seconds(10), halfClose: Bool = false
        ) {
            self.outboundHighWater = outboundHighWater
            self.inboundHighWater = inboundHighWater
            self.connectTimeout = connectTimeout
            self.halfClose = halfClose
        }

        var limits: ConnectionStateMachine.Limits {
            .init(outboundHighWater: max(1, outboundHighWater), inboundHighWater: max(1, inboundHighWater))
        }
    }

    /// Connects to host:port (an IPv4 or IPv6 address, "localhost", or a host name looked up first: `HostResolver`).
    /// Throws `TransportError`. Cancelling the calling task ends an attempt not yet established with `.cancelled`.
    public static func connect(
        host: String, port: UInt16, on loop: EventLoop, options: Options = Options()
    ) async throws -> PlainConnection {
        let addresses = try await HostResolver.addresses(of: host, within: options.connectTimeout)
        return try await ConnectTargets.first(of: addresses) { address in
            try await ConnectAttempt.connect(on: loop) { resume throws(TransportError) in
                let fd = try Socket.startConnect(host: address, port: port)
                return ConnectionDriver.launch(
                    loop: loop, fd: fd, engine: PassThroughEngine(), connecting: true, limits: options.limits,
                    halfClose: options.halfClose, handshakeTimeout: options.connectTimeout
                ) { result in
                    resume(result.map { PlainConnection(driver: $0.0) })
                }
            }
        }
    }

    /// Ends this side's stream (a TCP FIN) once every byte written before is sent, while the peer's stream is still
    /// read: how a proxy passes a client's half-close on. Later writes fail with `.connectionClosed`. Returns once
    /// the FIN is sent or the connection is closed.
    public func shutdownWrite() async {
        await handle.shutdownWrite()
    }
}
