import TokenetWire

/// What the lifecycle commands of the wallet, the issuer and the TSP share: the action words, the reason flag and
/// amounts typed as decimals.
enum LifecycleArguments {
    static func action(_ word: String) -> TspV1.LifecycleAction {
        switch word {
        case "suspend": .suspend
        case "resume": .resume
        default: .delete
        }
    }

    /// The longest reason code the TSP accepts (`ChangeTokenStateRequest.reason_code`).
    static let reasonLimit = 64

    /// `--reason CODE`, required, as upper-case words (LOST_CARD). A reason code is not a set the protos list but
    /// it has a form, which the TSP checks: 1 to 64 of A-Z, 0-9 and _, since it is kept in the token's audit trail
    /// and shown to people. It is checked here too, so that a typo is a usage error naming the flag before any
    /// node is asked, instead of the TSP's refusal relayed by the wallet or the issuer.
    static func reason(_ flags: PartyFlags, command: String) throws(CLIError) -> String {
        guard let given = flags["--reason"], !given.isEmpty else {
            throw CLIError(.usage, "\(command): --reason CODE is required (e.g. USER_REQUEST, LOST_CARD)")
        }
        let reason = given.uppercased()
        let form = "1 to \(reasonLimit) of A-Z, 0-9 and _ (e.g. USER_REQUEST, LOST_CARD, FRAUD_SUSPECTED)"
        guard given.unicodeScalars.count <= reasonLimit else {
            throw CLIError(
                .usage,
                "\(command): --reason is \(given.unicodeScalars.count) characters long; a reason code is \(form)")
        }
        guard reason.utf8.count <= reasonLimit, reason.utf8.allSatisfy({ isReasonByte($0) }) else {
            // Quoted with escapes, so that a line break or a terminal control in it shows as such.
            throw CLIError(
                .usage, "\(command): --reason \(String(reflecting: given)) is not a reason code: use \(form)")
        }
        return reason
    }

    private static func isReasonByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || byte == UInt8(ascii: "_")
    }

    /// "12.50" → 1250, "7" → 700: at most two decimals, positive.
    static func amountMinor(_ text: String?, command: String) throws(CLIError) -> Int64 {
        guard let text, !text.isEmpty else { throw CLIError(.usage, "\(command): --amount is required (e.g. 12.50)") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let ascii = { (part: Substring) in part.utf8.allSatisfy { (48...57).contains($0) } }
        guard parts.count <= 2, !parts[0].isEmpty, ascii(parts[0]),
            parts.count == 1 || (1...2).contains(parts[1].count) && ascii(parts[1])
        else { throw CLIError(.usage, "\(command): --amount must look like 12.50, not '\(text)'") }
        // A well-formed amount past what the minor units hold is named as too large, not as malformed.
        let largest = amount(.max, "")
        let tooLarge = CLIError(.usage, "\(command): --amount \(text) is too large; at most \(largest.dropLast())")
        guard let whole = Int64(parts[0]) else { throw tooLarge }
        var cents: Int64 = 0
        if parts.count == 2 {
            cents = Int64(parts[1])! * (parts[1].count == 1 ? 10 : 1)
        }
        let (total, overflow) = whole.multipliedReportingOverflow(by: 100)
        let (sum, overflowSum) = total.addingReportingOverflow(cents)
        guard !overflow, !overflowSum else { throw tooLarge }
        guard sum > 0 else { throw CLIError(.usage, "\(command): --amount must be positive") }
        return sum
    }

    /// "12.50 EUR"; with an empty currency, the amount and a space.
    static func amount(_ minor: Int64, _ currency: String) -> String {
        let cents = minor.magnitude % 100
        return "\(minor / 100).\(cents < 10 ? "0" : "")\(cents) \(currency)"
    }
}
