import TokenetRPC
import TokenetWire

/// `tokenet wallet open-issuer-app ADDR CARD_REF [--caller ID]`: the person taps the in-app method of a card the
/// issuer left INACTIVE, and the wallet opens the issuer app with its caller identity and activation data.
extension WalletCommand {
    static let openIssuerApp = PartyAction(name: "open-issuer-app", valued: ["--caller"]) {
        flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["CARD_REF"])
        guard let cardRef = options.operands.first else {
            throw CLIError(.usage, "\(command): missing CARD_REF (the card-N that add-card printed)")
        }
        let request = WalletV1.OpenIssuerAppRequest(cardRef: cardRef, callerOverride: flags["--caller"] ?? "")
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await WalletV1.WalletAppToApp.Client(session.client).openIssuerApp(request, options: callOptions)
            },
            text: { response, traceID in PartyText.openIssuerApp(response) + "\n(trace \(traceID))" })
    }
}
