import CTokenetShims
import Glibc

/// The TLS handshakes in progress from each source address, bounded.
///
/// Before its handshake a connection has no identity, only the address it comes from, and a peer that opens TCP
/// connections without finishing their handshakes holds a file descriptor each for the whole handshake timeout;
/// opened in a loop, they would take every descriptor the process has and no other peer could connect. Past the
/// limit an accepted socket is closed before any TLS (there is no identity yet to tell anything to), and the
/// listener reports the address. Lives on the listener's loop: only its thread touches it.
final class HandshakeLimit {
    let limit: Int
    private var inProgress: [Source: Int] = [:]

    init(limit: Int) {
        precondition(limit > 0, "an address must be allowed a handshake")
        self.limit = limit
    }

    /// Where handshakes are counted: an IPv4 address, or an IPv6 address's /64 network, since one IPv6 host usually
    /// holds a whole /64 and could otherwise open each connection from an address of its own.
    struct Source: Hashable, Sendable, CustomStringConvertible {
        /// The address's bytes in network order: 4 for IPv4, the first 8 for IPv6, none when the peer has no IP
        /// address (all such peers count under one key).
        let bytes: [UInt8]

        /// The source of `fd`'s peer; an IPv4-mapped IPv6 peer (a dual-stack listener's IPv4 client) is its IPv4
        /// address.
        init(peerOf fd: Int32) {
            var address = [UInt8](repeating: 0, count: 16)
            let length = Int(ctk_peer_address(fd, &address))
            self.init(bytes: Array(address.prefix(length == 16 ? 8 : length)))
        }

        init(bytes: [UInt8]) { self.bytes = bytes }

        var description: String {
            switch bytes.count {
            case 4: return bytes.map(String.init).joined(separator: ".")
            case 8:
                var address = bytes + [UInt8](repeating: 0, count: 8)
                var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else {
                    return "an IPv6 network"
                }
                return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/64"
            default: return "a peer without an IP address"
            }
        }
    }

    /// Counts a handshake from `fd`'s peer; nil when it may go ahead, else why it may not.
    func begin(_ fd: Int32) -> (source: Source, refusal: TransportError?) {
        begin(from: Source(peerOf: fd))
    }

    func begin(from source: Source) -> (source: Source, refusal: TransportError?) {
        let count = inProgress[source, default: 0]
        guard count < limit else {
            let which = source.bytes.count == 8 ? "one IPv6 /64 network" : "one address"
            return (
                source,
                TransportError(
                    .tooManyHandshakes,
                    "\(source) already has \(limit) TLS handshakes in progress, the most \(which) may have; "
                        + "its connection was closed before the handshake")
            )
        }
        inProgress[source] = count + 1
        return (source, nil)
    }

    /// A handshake `begin` let go ahead has ended, established or failed.
    func end(_ source: Source) {
        let left = inProgress[source, default: 1] - 1
        inProgress[source] = left > 0 ? left : nil
    }
}
