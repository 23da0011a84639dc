import Foundation
import TokenetNode

/// Picks free loopback ports before the nodes start, so every node can be given every peer's address up front.
///
/// The TSP calls the issuer and the issuer calls the TSP and the wallet, so no start order lets each node learn its
/// peers' kernel-chosen ports from their ready files. The kernel picks a free port for a socket that is closed at
/// once; the node binds it moments later.
enum PortReservation {
    static func freeLoopbackAddress() throws(CLIError) -> HostPort {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw CLIError(.setup, "cannot create a socket to find a free port") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else {
            throw CLIError(.setup, "cannot find a free loopback port: \(String(cString: strerror(errno)))")
        }
        return HostPort(host: "127.0.0.1", port: UInt16(bigEndian: address.sin_port))
    }
}
