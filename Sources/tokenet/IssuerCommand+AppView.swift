import TokenetRPC
import TokenetWire

/// `tokenet issuer app-view ADDR`: the issuer app's view of its cards in the wallet, through issuer-node's
/// IssuerApp service.
extension IssuerCommand {
    static let appView = PartyAction(name: "app-view") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerApp.Client(session.client).cardView(.init(), options: callOptions)
            },
            text: { response, _ in PartyText.appView(response) })
    }
}

extension PartyText {
    static func appView(_ response: IssuerV1.CardViewResponse) -> String {
        let listener = response.listening ? "listening to the wallet" : "not listening to the wallet"
        let header =
            "Issuer app (\(listener); account \(response.walletAccountID.isEmpty ? "-" : response.walletAccountID), "
            + "\(response.pulls) \(response.pulls == 1 ? "pull" : "pulls"), last event \(response.lastSequence))"
            + (response.selectedDigitalCardID.isEmpty
                ? "" : "\nSelected in the wallet: \(response.selectedDigitalCardID)")
        guard !response.cards.isEmpty else { return header + "\nNo cards in the wallet." }
        return header + "\n"
            + table(
                ["DIGITAL CARD", "STATE", "UPDATED BY"],
                response.cards.map {
                    [$0.digitalCardID, $0.removed ? "REMOVED" : state($0.tokenState), updatedBy($0.updatedBy)]
                })
    }

    /// What last changed an app card's row, in words: the view keeps the wallet event's wire name
    /// (WALLET_EVENT_KIND_TOKEN_STATUS_CHANGED), "pull" or "CARD_STATE", which `--json` gives as they are.
    static func updatedBy(_ source: String) -> String {
        switch source {
        case "pull": "pull of the wallet's tokens"
        case "CARD_STATE": "TSP card state message"
        case "WALLET_EVENT_KIND_TOKENIZED_CARD_ADDED": "wallet: card added"
        case "WALLET_EVENT_KIND_TOKEN_STATUS_CHANGED": "wallet: state changed"
        case "WALLET_EVENT_KIND_TOKENIZED_CARD_REMOVED": "wallet: card removed"
        default: short(source, prefix: "WALLET_EVENT_KIND_").lowercased().replacingOccurrences(of: "_", with: " ")
        }
    }
}
