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
        let range = reservedRange()
        for _ in 0..<200 {
            let port = UInt16.random(in: range)
            guard given.withLock({ $0.insert(port).inserted }) else { continue }
            if (try? bind(port)) != nil { return HostPort(host: "127.0.0.1", port: port) }
        }
        // Everything tried was taken: let the kernel choose, as before.
        let port = try bind(0)
        given.withLock { _ = $0.insert(port) }
        return HostPort(host: "127.0.0.1", port: port)
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

    /// Binds 127.0.0.1:`port` (0 for any) and closes at once; returns the port bound.
    private static func bind(_ port: UInt16) throws(CLIError) -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw CLIError(.setup, "cannot create a socket to find a free port") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                Foundation.bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else {
            throw CLIError(.setup, "cannot find a free loopback port: \(String(cString: strerror(errno)))")
        }
        return UInt16(bigEndian: address.sin_port)
    }
}
