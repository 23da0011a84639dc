import TokenetRPC
import TokenetWire

/// `tokenet wallet use-account|select-card ADDR …`: what the person chooses in the wallet app, sent to a
/// wallet-node's WalletSelection service (as the operator). Each change reaches the issuer app's card-data-changed
/// listener (ACTIVE_WALLET_ACCOUNT_CHANGED, SELECTED_CARD_CHANGED); choosing what is already chosen emits nothing.
extension WalletCommand {
    static let useAccount = PartyAction(name: "use-account") { arguments, command throws(CLIError) in
        let flags = try PartyFlags(parsing: arguments, command: command, valued: [], switches: ["--json"])
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1)
        guard let account = options.operands.first, !account.isEmpty else {
            throw CLIError(.usage, "\(command): missing WALLET_ACCOUNT (the wallet account to make active)")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await WalletV1.WalletSelection.Client(session.client).setActiveWalletAccount(
                    .init(walletAccountID: account), options: callOptions)
            },
            text: { response, traceID in selectionText(response) + "\n(trace \(traceID))" })
    }

    static let selectCard = PartyAction(name: "select-card") { arguments, command throws(CLIError) in
        let flags = try PartyFlags(parsing: arguments, command: command, valued: [], switches: ["--json"])
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1)
        guard let cardRef = options.operands.first, !cardRef.isEmpty else {
            throw CLIError(.usage, "\(command): missing CARD_REF (the card-N that add-card printed)")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await WalletV1.WalletSelection.Client(session.client).selectCard(
                    .init(cardRef: cardRef), options: callOptions)
            },
            text: { response, traceID in selectionText(response) + "\n(trace \(traceID))" })
    }

    static func selectionText(_ response: WalletV1.SelectionResponse) -> String {
        let card = response.selectedCardRef.isEmpty ? "none" : response.selectedCardRef
        let change = response.changed ? "changed" : "unchanged (already chosen; nothing emitted)"
        return "active wallet account \(response.activeWalletAccountID), selected card \(card): \(change)"
    }
}
