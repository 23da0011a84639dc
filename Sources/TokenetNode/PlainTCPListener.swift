import Dispatch
import Foundation

/// A TCP listener that accepts connections and closes them straight away.
///
/// It exists so a node can prove readiness (a bound port that accepts) before the RPC server lands; it will be
/// replaced through `NodeListenerFactory`. Accepting runs from a `DispatchSourceRead`, so no thread blocks in
/// `accept(2)` and stopping is just cancelling the source.
public final class PlainTCPListener: NodeListener, @unchecked Sendable {
    // Only `let` properties after init; the source serializes its handlers on `queue`.
    public let boundAddress: HostPort
    private let source: any DispatchSourceRead
    private let closed = DispatchSemaphore(value: 0)

    /// Binds and starts accepting on `address`.
    public static func bind(address: HostPort, logger: Logger) throws(NodeError) -> any NodeListener {
        try PlainTCPListener(address: address, logger: logger)
    }

    public init(address: HostPort, logger: Logger) throws(NodeError) {
        let descriptor = try Self.openListeningSocket(address)
        guard let bound = Self.localAddress(of: descriptor) else {
            let code = errno
            close(descriptor)
            throw NodeError(
                .listen, "cannot read the bound address", cause: SystemCallError(call: "getsockname", errno: code))
        }
        boundAddress = bound
        let queue = DispatchQueue(label: "tokenet.listener")
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        let closed = self.closed
        source.setEventHandler {
            // Drain every pending connection; the socket is non-blocking, so accept fails with EAGAIN when done.
            while true {
                let connection = accept(descriptor, nil, nil)
                if connection < 0 { break }
                logger.debug("accepted and closed a connection (RPC server not enabled yet)")
                close(connection)
            }
        }
        source.setCancelHandler {
            close(descriptor)
            closed.signal()
        }
        source.resume()
    }

    public func stop() {
        source.cancel()
        closed.wait()
        // Let a second stop() return too.
        closed.signal()
    }

    private static func openListeningSocket(_ address: HostPort) throws(NodeError) -> Int32 {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(address.host, String(address.port), &hints, &results)
        guard status == 0, let first = results else {
            let reason = String(cString: gai_strerror(status))
            throw NodeError(.listen, "cannot resolve listen address \(address): \(reason)")
        }
        defer { freeaddrinfo(first) }

        var lastError = SystemCallError(call: "socket", errno: EADDRNOTAVAIL)
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let type = info.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            let descriptor = socket(info.pointee.ai_family, type, info.pointee.ai_protocol)
            guard descriptor >= 0 else {
                lastError = SystemCallError(call: "socket", errno: errno)
                continue
            }
            var one: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.bind(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                lastError = SystemCallError(call: "bind", errno: errno)
                close(descriptor)
                continue
            }
            if listen(descriptor, 128) != 0 {
                lastError = SystemCallError(call: "listen", errno: errno)
                close(descriptor)
                continue
            }
            return descriptor
        }
        throw NodeError(.listen, "cannot listen on \(address)", cause: lastError)
    }

    private static func localAddress(of descriptor: Int32) -> HostPort? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard status == 0 else { return nil }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let lookup = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo(
                    $0, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                    NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard lookup == 0, let port = UInt16(Self.string(service)) else { return nil }
        return HostPort(host: Self.string(host), port: port)
    }

    private static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
