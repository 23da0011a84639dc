import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet tsp tokens|history ADDR …`: an operator at the TSP, through tsp-node's TspControl service.
enum TSPCommand {
    static let subcommand = PartyCommandGroup.subcommand(
        name: "tsp",
        summary:
            "List a tsp-node's tokens, show one token's audit trail, change tokens, simulate payments, encrypt a card, "
            + "rotate its card-data key.",
        help: help + "\n" + lifecycleHelp + "\n\n" + encryptCardHelp + "\n\n" + keysHelp,
        actions: [tokens, history] + lifecycleActions + [encryptCard] + keyActions)

    static let help = """
        Usage: tokenet tsp tokens ADDR [--wallet-account ID] [--issuer ID] [--wallet-node ID] [--state STATE]
                   [OPTIONS]
               tokenet tsp history ADDR DIGITAL_CARD_ID [OPTIONS]

        tokens lists the tokens of the TSP at ADDR (HOST:PORT), in the order they were made, each with the wallet
        node that holds it (WALLET: two wallet nodes may name their accounts and devices alike); the filters
        narrow the listing, and given together list the tokens that match them all. history prints one token's
        audit trail: every state change with its time, actor, reason and trace id.

        Options:
          --wallet-account ID  Only this wallet account's tokens.
          --issuer ID          Only this issuer's tokens (ISSUER).
          --wallet-node ID     Only the tokens this wallet node holds (WALLET).
          --state STATE        Only the tokens in this state: inactive (including those awaiting the issuer's
                               decision), active, suspended or deactivated.
          --json               Print the raw response as proto3 JSON.
        \(InspectOptions.partyConnectionHelp)
        Without --deadline these commands give up after \(PartySession.defaultDeadline.components.seconds) s.

        Exit status: 0 on success; 64 + the status code otherwise, printed as "ERROR: CODE: message" on stderr with
        "(trace ID)", the call's trace id in the nodes' logs, after it; 1 when the TSP cannot be reached or a TLS file
        (--cacert, --cert, --key) cannot be used; 2 for bad options.
        """

    static let tokens = PartyAction(
        name: "tokens", valued: ["--wallet-account", "--issuer", "--wallet-node", "--state"]
    ) { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        let request = TspV1.ListTokensRequest(
            walletAccountID: flags["--wallet-account"] ?? "", issuerID: flags["--issuer"] ?? "",
            walletNodeID: flags["--wallet-node"] ?? "",
            state: try flags["--state"].map { (text) throws(CLIError) in try tokenState(text, command: command) }
                ?? .unspecified)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await allTokens(session.client, request, options: PagedListing.options(session, first: callOptions))
            },
            text: { response, _ in PartyText.tokens(response, filteredBy: request) })
    }

    /// The `TokenState` a `--state` names: `active`, `ACTIVE` or `TOKEN_STATE_ACTIVE`.
    static func tokenState(_ text: String, command: String) throws(CLIError) -> CardV1.TokenState {
        let name = text.uppercased()
        let states = CardV1.TokenState.knownCases.filter { $0 != .unspecified }
        guard
            let state = states.first(where: {
                $0.protoValueName == name || $0.protoValueName == "TOKEN_STATE_" + name
            })
        else {
            throw CLIError(
                .usage,
                "\(command): --state \(shownName(text)) is not a token state: give "
                    + states.map { PartyText.state($0).lowercased() }.joined(separator: ", "))
        }
        return state
    }

    /// Every page of `ListTokens`.
    static func allTokens(
        _ client: any RPCCaller, _ request: TspV1.ListTokensRequest = .init(), options: () -> CallOptions
    ) async throws -> TspV1.ListTokensResponse {
        let control = TspV1.TspControl.Client(client)
        return try await PagedListing.all(request, from: "the TSP", options: options) {
            try await control.listTokens($0, options: $1)
        }
    }

    static let history = PartyAction(name: "history") { flags, command throws(CLIError) in
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...1, named: ["DIGITAL_CARD_ID"])
        guard let id = options.operands.first else {
            throw CLIError(.usage, "\(command): missing DIGITAL_CARD_ID (see tokenet tsp tokens)")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await wholeHistory(session.client, id, options: PagedListing.options(session, first: callOptions))
            },
            text: { response, _ in PartyText.history(response) })
    }

    /// Every page of one token's `TokenHistory`.
    static func wholeHistory(
        _ client: any RPCCaller, _ digitalCardID: String, options: () -> CallOptions
    ) async throws -> TspV1.TokenHistoryResponse {
        let control = TspV1.TspControl.Client(client)
        return try await PagedListing.all(
            TspV1.TokenHistoryRequest(digitalCardID: digitalCardID), from: "the TSP", options: options
        ) { try await control.tokenHistory($0, options: $1) }
    }
}
