import Glibc
import Synchronization

/// Ports on 127.0.0.1 and every interface that a test can bind later, for a listener that must not exist yet (a
/// peer started before the party it calls, `tokenet up --base-port`).
///
/// Taken from below the ephemeral range (32768 and up on Linux): a port the system handed out and took back can be
/// handed out again at once as the source port of any connection the suite makes, and the later bind then fails
/// with EADDRINUSE. No connection is given a port below the range; only another explicit bind could take it.
///
/// From 14000–19999: the `tokenet` sandboxes the suite starts (scenarios, `tokenet up`) reserve their nodes' ports
/// in 20000–32767 (`PortReservation`), and a test's port drawn from the same range was once bound between a
/// sandbox's reservation and its node's bind, which then failed with EADDRINUSE.
public enum FreePorts {
    /// The first of `count` consecutive ports that are free now, which is as much as a test can know.
    public static func run(of count: Int = 1) throws -> Int {
        for _ in 0..<500 {
            let base = Int.random(in: 14_000...(19_999 - count))
            if (0..<count).allSatisfy({ isFree(base + $0) }), (0..<count).allSatisfy({ handOut(base + $0) }) {
                return base
            }
        }
        throw NoFreePorts()
    }

    /// Ports this process has handed out already. A port is free until its test binds it, which may be seconds
    /// later (a peer started first, pointed at a TSP yet to start): handed to a second test meanwhile, two tests'
    /// nodes met on it, and one test's issuer registered with the other's TSP.
    private static let handedOut = Mutex<Set<Int>>([])

    /// Records `port` as handed out; false when it was already (or the process has handed out 5,000, most of the
    /// range, when ports are reused as before).
    public static func handOut(_ port: Int) -> Bool {
        handedOut.withLock { ports in
            if ports.count >= 5_000 { ports.removeAll() }
            return ports.insert(port).inserted
        }
    }

    public struct NoFreePorts: Error {}

    /// Whether `port` can be bound on every interface now.
    public static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
