import Foundation

/// Plain POSIX sockets on 127.0.0.1, for tests that need a port or a connection with nothing of Tokenet's in between.
public enum LoopbackSocket {
    /// Calls `body` with 127.0.0.1:`port` as the generic address `bind`, `connect` and `getsockname` take, and its
    /// length; returns what `body` returns and the address as `body` left it (`getsockname` fills in the port).
    public static func withAddress<T>(
        port: UInt16, _ body: (UnsafeMutablePointer<sockaddr>, inout socklen_t) -> T
    ) -> (result: T, port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, &length) }
        }
        return (result, UInt16(bigEndian: address.sin_port))
    }

    /// Connects to 127.0.0.1:`port` and closes at once, on the calling thread, with nothing run between the two.
    public static func connectAndClose(port: UInt16) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(descriptor) }
        let (connected, _) = withAddress(port: port) { address, length in connect(descriptor, address, length) == 0 }
        guard connected else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED) }
    }

    /// A TCP socket bound to 127.0.0.1:`port` (any free port for 0), and the port it got.
    static func boundSocket(port: UInt16) throws -> (descriptor: Int32, port: UInt16) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        let (bound, port) = withAddress(port: port) { address, length in
            bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
        }
        guard bound else {
            close(descriptor)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        return (descriptor, port)
    }

    /// A port of 127.0.0.1 that refuses connections for as long as this lives: a socket bound to it that does not
    /// listen. No other socket can take the port meanwhile, as one can take the port of a listener that was closed
    /// (an "unreachable" upstream made that way was once another test's server, which answered).
    public final class RefusingPort: Sendable {
        public let port: UInt16
        private let descriptor: Int32

        /// Binds `port`, or any free port for 0.
        public init(port: UInt16 = 0) throws {
            (descriptor, self.port) = try LoopbackSocket.boundSocket(port: port)
        }

        deinit { close(descriptor) }
    }

    /// A port of 127.0.0.1 that listens and never accepts: whether anything connected to it (the kernel queues the
    /// connection whether or not it is accepted) shows whether a command reached the network at all.
    public final class ListeningPort: Sendable {
        public let port: UInt16
        private let descriptor: Int32

        public init() throws {
            let (descriptor, port) = try LoopbackSocket.boundSocket(port: 0)
            guard listen(descriptor, 8) == 0 else {
                close(descriptor)
                throw POSIXError(.EADDRNOTAVAIL)
            }
            self.descriptor = descriptor
            self.port = port
        }

        /// Whether a connection waits to be accepted.
        public var hasPendingConnection: Bool {
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            return poll(&waiting, 1, 0) == 1
        }

        deinit { close(descriptor) }
    }
}
