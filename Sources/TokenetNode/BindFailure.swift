import Foundation

/// What to do about a listening address the system would not bind, for a node's `--listen` and the CLI's proxy.
public enum BindFailure {
    /// The advice for `reason`, the bind's failure ending in "(errno N)": another machine's address needs another
    /// address, not a search for the process that holds it.
    public static func remedy(host: String, reason: String) -> String {
        if reason.hasSuffix("(errno \(EADDRNOTAVAIL))") {
            return "\(host) is not an address of this machine; listen on 127.0.0.1 or on one of this machine's own "
                + "addresses"
        }
        return "stop what holds it, or give another address (port 0 picks a free one)"
    }
}
