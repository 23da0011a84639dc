import Foundation
import Synchronization
import TokenetNode

/// Picks free loopback ports before the nodes start, so every node can be given every peer's address up front.
///
/// The TSP calls the issuer and the issuer calls the TSP and the wallet, so no start order lets each node learn its
/// peers' kernel-chosen ports from their ready files. A port is free when a socket can bind it; the node binds it
/// moments later.
///
/// The ports come from below the kernel's ephemeral range (`ip_local_port_range`), chosen at random: a port the
/// kernel picked for a socket bound to port 0 could be handed out again to the next such socket (the fault proxies
/// that start right after, another test's listener) or to an outgoing connection before the node binds it. That
/// happened: a node failed to start with EADDRINUSE on its reserved port. Below the range, only an explicit bind
/// takes a port.
enum PortReservation {
    /// Ports handed out by this process, never handed out twice.
    private static let given = Mutex<Set<UInt16>>([])

    static func freeLoopbackAddress() throws(CLIError) -> HostPort {
        try freeAddress(on: "127.0.0.1")
    }

    /// A free port on `host` (an IP address: a node's `--listen` host), chosen as `freeLoopbackAddress` chooses.
    static func freeAddress(on host: String) throws(CLIError) -> HostPort {
        let range = reservedRange()
        for _ in 0..<200 {
            let port = UInt16.random(in: range)
            guard given.withLock({ $0.insert(port).inserted }) else { continue }
            if (try? bind(host, port)) != nil { return HostPort(host: host, port: port) }
        }
        // Everything tried was taken: let the kernel choose, as before.
        let port = try bind(host, 0)
        given.withLock { _ = $0.insert(port) }
        return HostPort(host: host, port: port)
    }

    /// Whether `port` on `host` can be bound now; the system's reason when it cannot.
    static func unavailable(_ host: String, _ port: UInt16) -> String? {
        do throws(CLIError) {
            _ = try bind(host, port)
            given.withLock { _ = $0.insert(port) }
            return nil
        } catch {
            return error.message
        }
    }

    /// Refuses `host` when it is not an address of this machine (the usage error `bind` throws for it); any other
    /// failure to bind is left to the ports that are bound later, with their own messages.
    static func requireLocal(_ host: String) throws(CLIError) {
        do {
            _ = try bind(host, 0)
        } catch let error where error.code == .usage {
            throw error
        } catch {}
    }

    /// 12,000 ports just below the ephemeral range (20000–32767 with Linux's default 32768–60999).
    static func reservedRange() -> ClosedRange<UInt16> {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let low = text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768
        let upper = low - 1
        let lower = max(1024, upper - 11_999)
        // An ephemeral range that starts near the bottom leaves no room below it: take the registered ports then.
        guard lower < upper else { return 1024...49151 }
        return UInt16(lower)...UInt16(upper)
    }

    /// Binds `host`:`port` (an IPv4 or IPv6 address; port 0 for any) and closes at once; returns the port bound.
    /// SO_REUSEADDR as the nodes set it, so a port whose last connections linger in TIME_WAIT counts as free.
    private static func bind(_ host: String, _ port: UInt16) throws(CLIError) -> UInt16 {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &results) == 0, let first = results else {
            throw CLIError(.setup, "\(host) is not an IP address to listen on")
        }
        defer { freeaddrinfo(first) }
        let descriptor = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard descriptor >= 0 else { throw CLIError(.setup, "cannot create a socket to find a free port") }
        defer { close(descriptor) }
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let done = withUnsafeMutablePointer(to: &bound) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                Foundation.bind(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0
                    && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard done else {
            let number = errno
            // Another machine's address (`--host 8.8.8.8`) is a bad option, said as the nodes and the proxy say it,
            // not "cannot bind 8.8.8.8:0", a port the person never gave.
            if number == EADDRNOTAVAIL {
                throw CLIError(
                    .usage,
                    "\(host) is not an address of this machine; give 127.0.0.1, 0.0.0.0 (every interface), :: or one "
                        + "of this machine's own addresses")
            }
            throw CLIError(
                .setup, "cannot bind \(HostPort(host: host, port: port)): \(String(cString: strerror(number)))")
        }
        // The port lies at the same offset in sockaddr_in and sockaddr_in6.
        return withUnsafePointer(to: &bound) { pointer in
            pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }
}
