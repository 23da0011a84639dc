import CTokenetShims

/// The TLS handshakes in progress from each source address, bounded.
///
/// Before its handshake a connection has no identity, only the address it comes from, and a peer that opens TCP
/// connections without finishing their handshakes holds a file descriptor each for the whole handshake timeout;
/// opened in a loop, they would take every descriptor the process has and no other peer could connect. Past the
/// limit an accepted socket is closed before any TLS (there is no identity yet to tell anything to), and the
/// listener reports the address. Lives on the listener's loop: only its thread touches it.
final class HandshakeLimit {
    let limit: Int
    private var inProgress: [Int64: Int] = [:]

    init(limit: Int) {
        precondition(limit > 0, "an address must be allowed a handshake")
        self.limit = limit
    }

    /// Counts a handshake from `fd`'s peer; nil when it may go ahead, else why it may not. A peer without an IPv4
    /// address counts under one key of its own.
    func begin(_ fd: Int32) -> (address: Int64, refusal: TransportError?) {
        let address = ctk_peer_ipv4(fd)
        let count = inProgress[address, default: 0]
        guard count < limit else {
            let name = Self.name(of: address)
            return (
                address,
                TransportError(
                    .tooManyHandshakes,
                    "\(name) already has \(limit) TLS handshakes in progress, the most one address may have; "
                        + "its connection was closed before the handshake")
            )
        }
        inProgress[address] = count + 1
        return (address, nil)
    }

    /// A handshake `begin` let go ahead has ended, established or failed.
    func end(_ address: Int64) {
        let left = inProgress[address, default: 1] - 1
        inProgress[address] = left > 0 ? left : nil
    }

    static func name(of address: Int64) -> String {
        guard address >= 0 else { return "a peer without an IPv4 address" }
        return [24, 16, 8, 0].map { String((address >> Int64($0)) & 0xff) }.joined(separator: ".")
    }
}
