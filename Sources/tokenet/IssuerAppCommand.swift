import TokenetRPC
import TokenetWire

/// `tokenet issuer-app authorize ADDR SESSION_ID --pin PIN | --deny`: the cardholder in the issuer app, after the
/// wallet opened it, signs in (the app then activates the token at the TSP) or declines; either way the app
/// answers the wallet.
enum IssuerAppCommand {
    static let subcommand = PartyCommandGroup.subcommand(
        name: "issuer-app",
        summary: "Complete an in-app activation in the issuer app: sign the cardholder in, or decline.",
        help: help, actions: [authorize])

    static let help = """
        Usage: tokenet issuer-app authorize ADDR SESSION_ID --pin PIN [OPTIONS]
               tokenet issuer-app authorize ADDR SESSION_ID --deny [OPTIONS]

        The cardholder's side of in-app (APP_TO_APP) activation, in the issuer app of the issuer-node at ADDR
        (HOST:PORT). `tokenet wallet open-issuer-app` opened the app and printed SESSION_ID ("card ending 1234 —
        sign in to activate"). With --pin the app signs the cardholder in through the authentication service and
        asks the TSP to activate the token with the access token it got; a failed sign-in leaves the session open
        for another try. With --deny the cardholder declines. Either way the app answers the wallet: approved, or
        failure with the reason, and the wallet updates its card.

        Options:
          --pin PIN            The PIN the cardholder types into the app.
          --deny               Decline instead of signing in.
          --json               Print the raw response as proto3 JSON.
        \(InspectOptions.connectionHelp)
        Without --deadline this command gives up after \(PartySession.defaultDeadline.components.seconds) s.

        Exit status: 0 when the session was answered (approved or failure); 64 + the status code otherwise,
        printed as "ERROR: CODE: message" on stderr; 1 when the issuer cannot be reached; 2 for bad options.
        """

    static let authorize = PartyAction(name: "authorize") { arguments, command throws(CLIError) in
        let flags = try PartyFlags(
            parsing: arguments, command: command, valued: ["--pin"], switches: ["--deny", "--json"])
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1)
        guard let sessionID = options.operands.first else {
            throw CLIError(.usage, "\(command): missing SESSION_ID (the session wallet open-issuer-app printed)")
        }
        let deny = flags.switches.contains("--deny")
        guard deny != (flags["--pin"] != nil) else {
            throw CLIError(.usage, "\(command): give --pin PIN or --deny (one of them)")
        }
        let request = IssuerV1.AuthorizeAppSessionRequest(sessionID: sessionID, pin: flags["--pin"] ?? "", deny: deny)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerAppToApp.Client(session.client).authorize(request, options: callOptions)
            },
            text: { response, traceID in PartyText.authorizeAppSession(response) + "\n(trace \(traceID))" })
    }
}
