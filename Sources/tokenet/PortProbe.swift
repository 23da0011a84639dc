import Foundation
import TokenetNode

/// Opens and closes one TCP connection, to show a node's listener really accepts.
enum PortProbe {
    static func connect(to address: HostPort, name: String) throws(CLIError) {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(address.host, String(address.port), &hints, &results) == 0, let first = results else {
            throw CLIError(.node, "cannot resolve \(name)'s address \(address)")
        }
        defer { freeaddrinfo(first) }
        let descriptor = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard descriptor >= 0 else { throw CLIError(.node, "cannot create a socket to probe \(name)") }
        defer { close(descriptor) }
        guard Glibc.connect(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let reason = String(cString: strerror(errno))
            throw CLIError(.node, "\(name) does not accept connections on \(address): \(reason)")
        }
    }
}
