import TokenetRPC
import TokenetWire

/// `tokenet issuer cards|push-card|outbox|activate-token|app-view|sync ADDR …`: an operator at the issuer, through issuer-node's
/// IssuerControl, IssuerCallCentre and IssuerApp services.
enum IssuerCommand {
    static let subcommand = PartyCommandGroup.subcommand(
        name: "issuer",
        summary:
            "List an issuer-node's cards, push one to a wallet, read its outbox, activate tokens, show its app view, "
            + "enrol accounts for strong authentication.",
        help: help + "\n\n" + enrolmentHelp + "\n" + cardCareHelp,
        actions: [cards, pushCard, outbox, activateToken, appView, sync, enroll, unlock] + cardCareActions)

    static let help = """
        Usage: tokenet issuer cards ADDR [OPTIONS]
               tokenet issuer push-card ADDR CARD_ID --mode receipt|session [--wallet-account ID]
                                        [--wallet-node ID] [OPTIONS]
               tokenet issuer outbox ADDR [--digital-card ID] [OPTIONS]
               tokenet issuer activate-token ADDR DIGITAL_CARD_ID [OPTIONS]
               tokenet issuer app-view ADDR [OPTIONS]
               tokenet issuer sync ADDR [OPTIONS]

        cards lists the cards the issuer at ADDR (HOST:PORT) holds, masked, with the rule it applies when they are
        digitized. push-card pushes one of them to a wallet: --mode receipt asks the TSP for a single-use push
        receipt (Mastercard only; with --wallet-account only that wallet account can redeem it, and as the TSP
        knows no list of wallet accounts, an account no wallet has shows only when a wallet adds the card) and
        prints it for `tokenet wallet add-card --receipt`; --mode session pushes the card data to the wallet
        provider's backend (which refuses an account the wallet does not have) and prints the push session id for
        `tokenet wallet add-card --push-session`. outbox lists the messages the issuer sent (one-time codes by SMS
        or e-mail, activation codes; destinations masked), each kept until a week after its code expired
        (outbox_retention_s in issuer-policy.json). activate-token is the call centre: after verifying the cardholder,
        the operator has the TSP activate the INACTIVE token. app-view shows the issuer app's view of its cards in the
        wallet, kept from the wallet's card-data-changed listener and the token states pulled at each connection.
        RENEWAL in cards is a renewal waiting for the TSP's answer: the reserved number (masked), expiry, since when.
        TOKENS counts the card's tokens not deleted (INACTIVE ones waiting for ID&V too), those the TSP's
        stand-in approved included (--json names them).
        sync checks the issuer's tokens with the TSP now, as the issuer does each time its notification stream to
        the TSP opens: it records the tokens the TSP's stand-in decided and the tokens the TSP deleted whose
        messages the issuer missed (dropped while the issuer was away), so that TOKENS counts them as they are.

        Options:
          --mode MODE          receipt or session (required for push-card).
          --wallet-account ID  The wallet account to push to (default: any account may redeem a receipt; a
                               session goes to the account active in the wallet). Account names are each
                               wallet node's own: add --wallet-node to bind a receipt to one wallet node.
          --wallet-node ID     receipt: the wallet node it is for (its certificate's tokenet://wallet/ID); no other
                               wallet node can redeem it (default: any). A session is the --wallet node's.
          --digital-card ID    outbox: only the messages about this token.
          --json               Print the raw response as proto3 JSON.
        \(InspectOptions.partyConnectionHelp)
        Without --deadline these commands give up after \(PartySession.defaultDeadline.components.seconds) s.

        Exit status: 0 on success; 64 + the status code otherwise, printed as "ERROR: CODE: message" on stderr with
        "(trace ID)", the call's trace id in the nodes' logs, after it; 1 when the issuer cannot be reached or a TLS
        file (--cacert, --cert, --key) cannot be used; 2 for bad options. suspend-tokens, resume-tokens and
        delete-tokens print each token's result and exit with 64 + the code of the first token refused, if any was;
        block-card and unblock-card too, except for a token refused because it is already in the state the card's
        change leads to (SUSPENDED by the issuer already, say).
        """

    static let cards = PartyAction(name: "cards") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in try await allCards(session, callOptions) },
            text: { response, _ in PartyText.issuerCards(response) })
    }

    static let sync = PartyAction(name: "sync") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerControl.Client(session.client).syncWithTsp(.init(), options: callOptions)
            },
            text: { response, traceID in
                "Checked \(response.tokensChecked) \(response.tokensChecked == 1 ? "token" : "tokens") with the TSP: "
                    + "\(response.standInRecorded) decided by its stand-in and \(response.deletedRecorded) deleted "
                    + "recorded now."
                    + (response.tokenChangesSettled + response.tokenChangesPending > 0
                        ? "\nPending token changes of blocked or opened cards: \(response.tokenChangesSettled) made, "
                            + "\(response.tokenChangesPending) still pending"
                            + (response.tokenChangesPending > 0
                                ? " (issuer cards names them; the issuer node goes on trying)." : ".") : "")
                    + "\n(trace \(traceID))"
            })
    }

    /// Every page of `ListCards`.
    static func allCards(
        _ session: InspectSession, _ callOptions: CallOptions
    ) async throws -> IssuerV1.ListCardsResponse {
        let client = IssuerV1.IssuerControl.Client(session.client)
        return try await PagedListing.all(
            IssuerV1.ListCardsRequest(), from: "the issuer",
            options: PagedListing.options(session, first: callOptions)
        ) { try await client.listCards($0, options: $1) }
    }

    static let pushCard = PartyAction(name: "push-card", valued: ["--mode", "--wallet-account", "--wallet-node"]) {
        flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["CARD_ID"])
        guard let cardID = options.operands.first else {
            throw CLIError(.usage, "\(command): missing CARD_ID (see tokenet issuer cards)")
        }
        let mode = try mode(flags["--mode"], command: command)
        if let node = flags["--wallet-node"], node.contains("/") {
            throw CLIError(
                .usage,
                "\(command): --wallet-node takes the ID of the wallet node's certificate alone, such as wallet-1 "
                    + "for tokenet://wallet/wallet-1")
        }
        if mode == .session, flags["--wallet-node"] != nil {
            throw CLIError(
                .usage, "\(command): --wallet-node is for --mode receipt; a session is the wallet node's at --wallet")
        }
        let request = IssuerV1.PushCardRequest(
            cardID: cardID, mode: mode, walletAccountID: flags["--wallet-account"] ?? "",
            walletNodeID: flags["--wallet-node"] ?? "")
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await hintingLostAnswer(
                    "the issuer may have pushed the card all the same; pushing it again is safe (a receipt or "
                        + "session that is not used expires)"
                ) { try await IssuerV1.IssuerControl.Client(session.client).pushCard(request, options: callOptions) }
            },
            text: { response, traceID in PartyText.pushCard(response, for: request) + "\n(trace \(traceID))" })
    }

    static func mode(_ name: String?, command: String) throws(CLIError) -> IssuerV1.PushMode {
        switch name?.lowercased() {
        case "receipt": return .receipt
        case "session": return .session
        case nil: throw CLIError(.usage, "\(command): --mode receipt|session is required")
        default: throw CLIError(.usage, "\(command): --mode must be receipt or session, not '\(name!)'")
        }
    }
}
