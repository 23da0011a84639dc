import TokenetRPC
import TokenetWire

/// `tokenet issuer-app authorize ADDR …`: the cardholder in the issuer app simulated inside issuer-node.
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
}
