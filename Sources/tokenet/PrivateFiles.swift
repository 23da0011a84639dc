import Foundation

/// The files `up`, `demo`, `scenario` and `pki init` write (the workspace's directories, the PKI's directory, the
/// nodes' logs, `sandbox.env`) are their user's: with a permissive umask (000) they were made world-writable, and
/// another user could swap the sandbox's CA or point `sandbox.env` at another host. The nodes make their own data
/// directories and keys private already; certificates are made readable by Tools/gen-certs itself.
enum PrivateFiles {
    /// Adds 077 to the process's umask, for what it and the processes it starts create from now on.
    static func fromNowOn() {
        let previous = umask(0o077)
        umask(previous | 0o077)
    }
}
