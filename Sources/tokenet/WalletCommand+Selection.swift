import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet wallet use-account|select-card ADDR …`: what the person chooses in the wallet app, sent to a
/// wallet-node's WalletSelection service (as the operator). Each change reaches the issuer app's card-data-changed
/// listener (ACTIVE_WALLET_ACCOUNT_CHANGED, SELECTED_CARD_CHANGED); choosing what is already chosen emits nothing.
extension WalletCommand {
    static let useAccount = selection(
        "use-account", missing: "WALLET_ACCOUNT (the wallet account to make active)"
    ) { client, account, options in
        try await client.setActiveWalletAccount(.init(walletAccountID: account), options: options)
    }

    static let selectCard = selection(
        "select-card", missing: "CARD_REF (the card-N that add-card printed)"
    ) { client, cardRef, options in
        try await client.selectCard(.init(cardRef: cardRef), options: options)
    }

    /// One selection command: a single operand, one WalletSelection call, the selection as the answer.
    static func selection(
        _ name: String, missing: String,
        call:
            @escaping @Sendable (WalletV1.WalletSelection.Client, String, CallOptions) async throws
            -> WalletV1.SelectionResponse
    ) -> PartyAction {
        PartyAction(name: name) { flags, command throws(CLIError) in
            let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1)
            guard let operand = options.operands.first, !operand.isEmpty else {
                throw CLIError(.usage, "\(command): missing \(missing)")
            }
            return try PartySession.run(
                options, json: flags.json,
                call: { session, callOptions in
                    try await call(WalletV1.WalletSelection.Client(session.client), operand, callOptions)
                },
                text: { response, traceID in selectionText(response) + "\n(trace \(traceID))" })
        }
    }

    static func selectionText(_ response: WalletV1.SelectionResponse) -> String {
        let card = response.selectedCardRef.isEmpty ? "none" : response.selectedCardRef
        let change = response.changed ? "changed" : "unchanged (already chosen; nothing emitted)"
        return "active wallet account \(maskPAN(response.activeWalletAccountID)), selected card \(card): \(change)"
    }
}
