import TokenetNode
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
        guard let given = flags["--reason"] else {
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

    /// `--amount` in `currency`'s minor units (ISO 4217; USD when none is given, as the TSP takes it): "12.50" →
    /// 1250 cents, "1250" JPY → 1250 yen. Positive, with at most the currency's decimals.
    static func amountMinor(_ text: String?, currency: String?, command: String) throws(CLIError) -> Int64 {
        guard let text, !text.isEmpty else { throw CLIError(.usage, "\(command): --amount is required (e.g. 12.50)") }
        let code = currency.map { $0.isEmpty ? "USD" : $0.uppercased() } ?? "USD"
        // As the TSP checks it: the amount's decimals depend on the currency, which was not looked at first.
        guard CurrencyAmount.isCode(code) else {
            throw CLIError(
                .usage,
                "\(command): --currency must be an ISO 4217 code in use, such as USD (XTS for testing), not "
                    + "'\(maskPAN(currency ?? ""))'")
        }
        switch CurrencyAmount.parse(text, currency: code) {
        case .success(let minor):
            return minor
        case .failure(.malformed):
            let decimals = CurrencyAmount.decimals(of: code)
            let example = decimals == 0 ? "1250" : "12.5" + String(repeating: "0", count: decimals - 1)
            throw CLIError(.usage, "\(command): --amount must look like \(example), not '\(text)'")
        case .failure(.tooManyDecimals(0)):
            throw CLIError(.usage, "\(command): --amount \(text): \(code) has no minor unit; give a whole amount")
        case .failure(.tooManyDecimals(let decimals)):
            throw CLIError(.usage, "\(command): --amount \(text) has more decimals than \(code)'s \(decimals)")
        case .failure(.tooLarge(let largest)):
            // Not echoed: sixteen digits typed as an amount may be a card number pasted in the wrong place.
            throw CLIError(.usage, "\(command): --amount is too large; at most \(largest)")
        case .failure(.notPositive):
            throw CLIError(.usage, "\(command): --amount must be positive")
        }
    }
}
