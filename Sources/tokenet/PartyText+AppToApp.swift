import TokenetWire

/// Texts for in-app activation.
extension PartyText {
    static func openIssuerApp(_ response: WalletV1.OpenIssuerAppResponse) -> String {
        let card = response.card ?? WalletV1.WalletCard()
        let sent =
            response.passSerialNumber.isEmpty
            ? "activation data \(response.activationData)" : "pass serial number \(response.passSerialNumber)"
        return "\(card.cardRef): the issuer app opened (caller \(response.caller), \(sent)).\n"
            + "  Session \(response.sessionID): \(response.message)"
    }

    static func authorizeAppSession(_ response: IssuerV1.AuthorizeAppSessionResponse) -> String {
        var line: String
        switch response.result {
        case .approved where response.alreadyActive:
            line = "\(response.digitalCardID): approved, but the token was ACTIVE already: nothing was activated."
        case .approved:
            line = "\(response.digitalCardID): approved; the token is \(state(response.tokenState))."
        default:
            line = "\(response.digitalCardID): failure: \(response.reason)."
        }
        line +=
            response.walletNotified
            ? " The wallet was told." : " The wallet was NOT told: \(response.walletError)"
        return line
    }
}
