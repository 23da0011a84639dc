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

    /// `--reason CODE`, required, as upper-case words (LOST_CARD).
    static func reason(_ flags: PartyFlags, command: String) throws(CLIError) -> String {
        guard let reason = flags["--reason"], !reason.isEmpty else {
            throw CLIError(.usage, "\(command): --reason CODE is required (e.g. USER_REQUEST, LOST_CARD)")
        }
        return reason.uppercased()
    }

    /// "12.50" → 1250, "7" → 700: at most two decimals, positive.
    static func amountMinor(_ text: String?, command: String) throws(CLIError) -> Int64 {
        guard let text, !text.isEmpty else { throw CLIError(.usage, "\(command): --amount is required (e.g. 12.50)") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = Int64(parts[0]), whole >= 0,
            parts.count == 1 || (1...2).contains(parts[1].count) && parts[1].allSatisfy(\.isNumber)
        else { throw CLIError(.usage, "\(command): --amount must look like 12.50, not '\(text)'") }
        var cents: Int64 = 0
        if parts.count == 2 {
            cents = Int64(parts[1])! * (parts[1].count == 1 ? 10 : 1)
        }
        let (total, overflow) = whole.multipliedReportingOverflow(by: 100)
        guard !overflow, total + cents > 0 else { throw CLIError(.usage, "\(command): --amount must be positive") }
        return total + cents
    }

    static func amount(_ minor: Int64, _ currency: String) -> String {
        let cents = minor.magnitude % 100
        return "\(minor / 100).\(cents < 10 ? "0" : "")\(cents) \(currency)"
    }
}
