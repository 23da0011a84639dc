import Foundation

/// What to do about a listening address the system would not bind, for a node's `--listen` and the CLI's proxy.
public enum BindFailure {
    /// The advice for `reason`, the bind's failure ending in "(errno N)": another machine's address needs another
    /// address, and a privileged port another port, not a search for the process that holds it.
    public static func remedy(host: String, reason: String) -> String {
        if reason.hasSuffix("(errno \(EADDRNOTAVAIL))") {
            return "\(host) is not an address of this machine; listen on 127.0.0.1 or on one of this machine's own "
                + "addresses"
        }
        // A port below the system's first unprivileged one (1024 unless net.ipv4.ip_unprivileged_port_start says
        // otherwise) needs privileges: nothing holds it, so looking for what does was no help.
        if reason.hasSuffix("(errno \(EACCES))") {
            return "the port needs privileges this process does not have (ports below 1024 usually do); give a port "
                + "of 1024 or above (port 0 picks a free one)"
        }
        if reason.hasSuffix("(errno \(EADDRINUSE))") {
            return "stop what holds it, or give another address (port 0 picks a free one)"
        }
        return "give another address: 127.0.0.1, [::1], 0.0.0.0 or [::] (every interface), or one of this machine's "
            + "own addresses"
    }
}
