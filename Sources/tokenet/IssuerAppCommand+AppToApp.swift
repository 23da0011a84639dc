import TokenetRPC
import TokenetWire

/// `tokenet issuer-app authorize ADDR SESSION_ID --pin PIN | --deny`: the cardholder in the issuer app, after the
/// wallet opened it, signs in (the app then activates the token at the TSP) or declines; either way the app
/// answers the wallet.
extension IssuerAppCommand {
    static let authorize = PartyAction(name: "authorize", valued: ["--pin"], switches: ["--deny", "--json"]) {
        flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["SESSION_ID"])
        guard let sessionID = options.operands.first else {
            throw CLIError(.usage, "\(command): missing SESSION_ID (the session wallet open-issuer-app printed)")
        }
        let deny = flags.switches.contains("--deny")
        guard deny != (flags["--pin"] != nil) else {
            throw CLIError(.usage, "\(command): give --pin PIN or --deny (one of them)")
        }
        let request = IssuerV1.AuthorizeAppSessionRequest(
            sessionID: sessionID, pin: try flags.secret("--pin", sentWith: options) ?? "", deny: deny)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerAppToApp.Client(session.client).authorize(request, options: callOptions)
            },
            text: { response, traceID in PartyText.authorizeAppSession(response) + "\n(trace \(traceID))" })
    }
}
