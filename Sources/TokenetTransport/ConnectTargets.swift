/// Tries a host's addresses in turn until one takes the connection.
///
/// A name may have several addresses (IPv4 and IPv6, or several of either), and a node listens on only some of them:
/// bound to one IPv6 address, say, while the name's IPv4 address comes first. Only a failure to make the TCP
/// connection (`TransportError.isConnectFailure`: refused, unreachable, no answer in time) moves on to the next
/// address, since nothing reached the peer; any later failure (the TLS handshake, the peer's certificate) is the
/// answer, and so is a cancellation. When every address fails, the first one's error is the one reported: the address
/// the host is usually reached at.
enum ConnectTargets {
    static func first<Connection>(
        of addresses: [String], _ attempt: (String) async throws -> Connection
    ) async throws -> Connection {
        var firstFailure: (any Error)?
        for (index, address) in addresses.enumerated() {
            do {
                return try await attempt(address)
            } catch let error as TransportError where error.isConnectFailure && index < addresses.count - 1 {
                firstFailure = firstFailure ?? error
            } catch {
                guard let firstFailure, (error as? TransportError)?.isConnectFailure == true else { throw error }
                throw firstFailure
            }
        }
        // Not reached: the last address either connects or throws.
        throw firstFailure ?? TransportError(.invalidAddress, "no address to connect to")
    }
}
