import CTokenetShims
import Glibc

/// Thin wrappers over non-blocking TCP system calls, translating errno into `TransportError`.
public enum Socket {
    enum ReadOutcome: Equatable {
        case bytes(Int)
        case wouldBlock
        case endOfFile
    }

    /// An IP address a socket can use without a lookup: an IPv4 dotted quad, an IPv6 literal (`::1`, without
    /// brackets), or "localhost", taken as 127.0.0.1 (never looked up, to avoid blocking name resolution on the
    /// loop). Returns the address and its family.
    static func ipAddress(_ host: String) throws(TransportError) -> (address: String, family: Int32) {
        let address = host == "localhost" ? "127.0.0.1" : host
        let family = ctk_ip_family(address)
        guard family != 0 else {
            throw TransportError(.invalidAddress, "\(host) is not an IP address (or localhost)")
        }
        return (address, family)
    }

    /// `host:port` as people write it, with an IPv6 address in brackets (`[::1]:7001`) so that the last colon is the
    /// port's.
    public static func display(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The connected peer as `address:port` (`[::1]:40012` for IPv6, an IPv4-mapped address as IPv4), for the
    /// lines that report a connection refused before it has an identity; nil without an IP peer.
    static func peerDisplay(_ fd: Int32) -> String? {
        var bytes = [UInt8](repeating: 0, count: 16)
        let length = Int(ctk_peer_address(fd, &bytes))
        let port = ctk_peer_port(fd)
        guard length == 4 || length == 16, port >= 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(length == 4 ? AF_INET : AF_INET6, &bytes, &text, socklen_t(text.count)) != nil else {
            return nil
        }
        return display(
            host: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
            port: UInt16(port))
    }

    /// A listening socket bound to host:port; port 0 picks a free port. Returns the descriptor and bound port. An
    /// IPv6 socket on `::` also takes IPv4 connections (as `::ffff:a.b.c.d`) unless the system is set to
    /// `net.ipv6.bindv6only`.
    static func listen(host: String, port: UInt16, backlog: Int32 = 128) throws(TransportError) -> (Int32, UInt16) {
        let (address, family) = try ipAddress(host)
        let fd = opened(ctk_tcp_socket_family(family))
        guard fd >= 0 else { throw TransportError.system("socket", errno: errno) }
        do throws(TransportError) {
            guard ctk_set_reuseaddr(fd) == 0 else {
                throw TransportError.system("setsockopt(SO_REUSEADDR)", errno: errno)
            }
            guard ctk_bind_ip(fd, address, port) == 0 else {
                throw TransportError.system(
                    "bind \(display(host: address, port: port))", errno: errno, code: .invalidAddress)
            }
            guard Glibc.listen(fd, backlog) == 0 else { throw TransportError.system("listen", errno: errno) }
            let bound = ctk_local_port(fd)
            guard bound > 0 else { throw TransportError.system("getsockname", errno: errno) }
            return (fd, UInt16(bound))
        } catch {
            close(fd)
            throw error
        }
    }

    /// Starts a non-blocking connect; completion is signalled by writability and checked with `connectResult`.
    static func startConnect(host: String, port: UInt16) throws(TransportError) -> Int32 {
        let (address, family) = try ipAddress(host)
        let fd = opened(ctk_tcp_socket_family(family))
        guard fd >= 0 else {
            let err = errno
            // Out of descriptors, no address would do, and errno's own text says neither that nor what to do.
            if err == EMFILE || err == ENFILE {
                throw TransportError(
                    .io,
                    "cannot open a socket: \(String(cString: strerror(err))) (errno \(err)); the process is out of "
                        + "file descriptors (limit \(openFileLimit)): raise the limit (ulimit -n) or look for peers "
                        + "that hold many connections open")
            }
            // A family the machine lacks (IPv6 turned off) fails here, before any connect: another address may do.
            throw TransportError.system("socket", errno: err, isConnectFailure: true)
        }
        _ = ctk_set_nodelay(fd)
        if ctk_connect_ip(fd, address, port) != 0 && errno != EINPROGRESS {
            let err = errno
            close(fd)
            throw TransportError.system(
                "connect \(display(host: address, port: port))", errno: err, isConnectFailure: true)
        }
        return fd
    }

    static func connectResult(_ fd: Int32) throws(TransportError) {
        let err = ctk_socket_error(fd)
        if err != 0 { throw TransportError.system("connect", errno: err, isConnectFailure: true) }
    }

    /// Accepts one pending connection (non-blocking, close-on-exec, TCP_NODELAY); nil when none is pending.
    static func accept(_ listener: Int32) throws(TransportError) -> Int32? {
        while true {
            let fd = opened(ctk_accept(listener))
            if fd >= 0 {
                _ = ctk_set_nodelay(fd)
                return fd
            }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK: return nil
            case let err where err == EMFILE || err == ENFILE:
                // errno's own text ("Too many open files") says neither what follows nor what to do about it.
                let error = TransportError.system("accept4", errno: err)
                throw TransportError(
                    .io,
                    "cannot accept connections: \(error.message); the process is out of file descriptors "
                        + "(limit \(openFileLimit)), so new connections wait until some close: raise the limit "
                        + "(ulimit -n) or look for peers that hold many connections open")
            case let err: throw TransportError.system("accept4", errno: err)
            }
        }
    }

    /// The process's soft limit on open file descriptors, for messages; "unknown" when it cannot be read.
    static var openFileLimit: String {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return "unknown" }
        return limit.rlim_cur == rlim_t.max ? "unlimited" : String(limit.rlim_cur)
    }

    static func read(_ fd: Int32, into buffer: inout [UInt8]) throws(TransportError) -> ReadOutcome {
        let outcome = buffer.withUnsafeMutableBytes { bytes in
            Result { () throws(TransportError) in try read(fd, into: bytes) }
        }
        return try outcome.get()
    }

    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> ReadOutcome {
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .endOfFile }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let err: throw TransportError.system("read", errno: err)
            }
        }
    }

    /// Sends as much as the kernel takes; returns the number of bytes sent (0 when the socket buffer is full).
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Int {
        var sent = 0
        while sent < bytes.count {
            let count = ctk_send(fd, bytes.baseAddress! + sent, bytes.count - sent)
            if count >= 0 {
                sent += count
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return sent
            case let err: throw TransportError.system("send", errno: err)
            }
        }
        return sent
    }

    /// Makes the next `close` abortive: the kernel drops what is unsent and answers the peer with a TCP reset
    /// (SO_LINGER with a zero timeout), so the peer's next read or write fails with ECONNRESET instead of seeing an
    /// orderly end of stream.
    static func resetOnClose(_ fd: Int32) {
        var value = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
    }

    /// Shuts the write half (a TCP FIN after what the kernel holds); the socket is still read.
    static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    static func close(_ fd: Int32) {
        openCount.subtract(1, ordering: .relaxed)
        _ = Glibc.close(fd)
    }
}
