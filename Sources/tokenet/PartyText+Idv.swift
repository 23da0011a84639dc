import TokenetWire

/// Texts for the ID&V commands.
extension PartyText {
    static func selectMethod(_ response: WalletV1.WalletSelectIdvMethodResponse) -> String {
        let card = response.card ?? WalletV1.WalletCard()
        let method = response.method ?? CardV1.IdvMethod()
        let type = short(method.type.protoValueName, prefix: "IDV_METHOD_TYPE_")
        var line = "\(card.cardRef): \(method.id) (\(type))"
        switch method.type {
        case .otpSms, .otpEmail:
            line +=
                response.codeSent
                ? ": code sent to \(method.maskedValue)" : ": no new code sent; the code sent before is still valid"
            line += ", valid until \(time(ms: response.codeExpiresAtMs)), \(tries(response.triesLeft)) left."
        default:
            line += "."
        }
        return line + "\n  " + response.instructions
    }

    static func submitOTP(_ response: WalletV1.WalletSubmitOtpResponse, address: String = "ADDR") -> String {
        let card = response.card ?? WalletV1.WalletCard()
        let result = short(response.result.protoValueName, prefix: "OTP_RESULT_")
        var line = "\(card.cardRef): \(result)"
        if response.result == .incorrectCode { line += " (\(tries(response.triesLeft)) left)" }
        line += "; token \(card.digitalCardID) is \(state(card.state))."
        // The two results that end the code say what to do next, as select-method and resend-otp refusals do.
        switch response.result {
        case .expiredCode:
            line +=
                "\nThe code has expired: send a new one with tokenet wallet resend-otp \(address) \(card.cardRef) (when the "
                + "token's codes are spent, it names the other methods offered)."
        case .incorrectCodeRetriesExceeded:
            line +=
                "\nNo more codes can be tried for this token, by any one-time-code method: if the issuer offered "
                + "another kind of method (app-to-app or call-centre, among those accept-terms listed), verify the "
                + "cardholder with it (tokenet wallet select-method \(address) \(card.cardRef) METHOD_ID); otherwise "
                + "delete the card and add it again."
        default: break
        }
        return line
    }

    static func resendOTP(_ response: WalletV1.WalletResendOtpResponse) -> String {
        let card = response.card ?? WalletV1.WalletCard()
        // A TSP of an older Tokenet names no method: the line then says only that a code went out.
        let to = response.method.map { " to \($0.maskedValue) (method \($0.id))" } ?? ""
        // The code sent before stops working: said, since a person who types it later hears only INCORRECT_CODE.
        return "\(card.cardRef): a new code was sent\(to), valid until \(time(ms: response.codeExpiresAtMs)), "
            + "\(tries(response.triesLeft)) left; the code sent before no longer works."
    }

    /// `1 try`, `2 tries`.
    static func tries(_ count: UInt32) -> String { count == 1 ? "1 try" : "\(count) tries" }

    /// The messages, or what was asked for when there are none: a listing for one `--digital-card` that comes back
    /// empty says so, since "the outbox is empty" was wrong for an outbox holding other tokens' messages.
    static func outbox(_ response: IssuerV1.OutboxResponse, digitalCardID: String) -> String {
        guard !response.messages.isEmpty else {
            return digitalCardID.isEmpty
                ? "The outbox is empty." : "The outbox holds no message about \(shownName(digitalCardID))."
        }
        return table(
            ["SENT", "CHANNEL", "TO", "DIGITAL CARD", "TEXT"],
            response.messages.map {
                [time(ms: $0.sentAtMs), $0.channel, $0.maskedDestination, $0.digitalCardID, $0.text]
            })
    }

    static func activateToken(_ response: IssuerV1.CallCentreActivateResponse, digitalCardID: String) -> String {
        "\(digitalCardID) is \(state(response.tokenState))"
            + (response.changed ? " (activated by the call centre)." : " (it was already).")
    }
}
