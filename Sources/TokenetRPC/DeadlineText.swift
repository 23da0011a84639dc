/// The runtime's deadline messages told against a deadline the person gave: a call's own deadline is what was left
/// of it once connecting and reflection were done, so `--deadline 3ms` ended with "did not finish within its
/// deadline (143 µs)", a limit nobody had given.
public enum DeadlineText {
    /// `message` told against the command's deadline `given`, or nil when it is not one of the runtime's deadline
    /// messages. What a command added after it (a hint such as renew-card's "the renewal may have reached the
    /// issuer…") is kept after the rewritten part: the rewrite took the hint's closing parenthesis for the end of
    /// the time left, and put "of it left when the call started" inside the hint.
    public static func toldAgainstCommandDeadline(_ message: String, given: String) -> String? {
        let within = "the call did not finish within its deadline ("
        if message.hasPrefix(within), let close = message.dropFirst(within.count).firstIndex(of: ")") {
            let left = message[message.index(message.startIndex, offsetBy: within.count)..<close]
            return "the call did not finish within the command's deadline of \(given) (\(left) of it left when the "
                + "call started)\(message[message.index(after: close)...])"
        }
        // The node's own deadline timer may end the call first: its status says only that the deadline passed.
        let passed = "the deadline passed"
        if message == passed || message.hasPrefix(passed + ";") {
            return "the call did not finish within the command's deadline of \(given) (the node ended it as the "
                + "deadline passed)\(message.dropFirst(passed.count))"
        }
        let before = "the deadline passed before "
        if message.hasPrefix(before) {
            return "the command's deadline of \(given) ran out before \(message.dropFirst(before.count))"
        }
        return nil
    }
}
