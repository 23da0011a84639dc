import Foundation

extension NodeSpec {
    /// The `--help` text: every option this node accepts, generated from the same table the parser uses.
    public var helpText: String {
        let keys = NodeOptionKey.keys(for: self)
        let rows = keys.map { key in
            (key.takesValue ? "\(key.flag) \(key.placeholder(for: self))" : key.flag, key.help(for: self))
        }
        let width = rows.map(\.0.count).max() ?? 0
        var lines = [
            "\(name): \(summary)",
            "",
            "Usage: \(name) [options]",
            "",
            "Options:",
        ]
        for (usage, help) in rows {
            lines.append("  " + usage.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + help)
        }
        let peerKeys = knownPeers.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        lines += [
            "",
            "A --config file is a JSON object whose keys are the option names without dashes",
            "(\"listen\", \(peerKeys), \"data-dir\", \"plaintext\": true, ...); flags override it.",
            "TLS needs --cert, --key and --ca unless --plaintext is given (then none of them).",
            "On start the node prints 'READY \(name) pid=<pid> listen=<host:port>' to stdout.",
            "SIGTERM or SIGINT stops it gracefully (exit status 0): subscriptions end at once, calls in progress get",
            "--drain-timeout seconds to finish, and the node exits a second after that (up to 5 s more for handlers",
            "still stopping, such as a database transaction cancelled mid-way); if anything holds",
            "the stop up (a log pipe nobody reads), it exits with status 1 ten seconds after the drain timeout.",
            "SIGHUP (the terminal closed) stops it the same way, unless it was started with SIGHUP ignored (nohup).",
            "SIGQUIT quits it at once, without draining; SIGUSR1 and SIGUSR2 are ignored.",
            "Bad options exit with status 2.",
        ]
        return lines.joined(separator: "\n")
    }
}
