import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet tsp suspend-token|resume-token|delete-token|simulate-transaction|transactions|request-keys ADDR …`: the
/// TSP's operator acts on tokens and simulates payments, through tsp-node's TokenLifecycle and Transactions.
extension TSPCommand {
    static let lifecycleActions = [
        token("suspend"), token("resume"), token("delete"), simulateTransaction, transactions, requestKeys,
    ]

    static let lifecycleHelp = """

        Lifecycle and transactions:
               tokenet tsp suspend-token|resume-token|delete-token ADDR DIGITAL_CARD_ID --reason CODE [OPTIONS]
               tokenet tsp simulate-transaction ADDR --card DIGITAL_CARD_ID --amount 12.50 --merchant NAME
                   [--currency USD] [--authn] [OPTIONS]
               tokenet tsp transactions ADDR [DIGITAL_CARD_ID] [OPTIONS]
               tokenet tsp request-keys ADDR DIGITAL_CARD_ID [OPTIONS]

        suspend-token, resume-token and delete-token change a token for the TSP (e.g. --reason FRAUD_SUSPECTED);
        the wallet and the issuer app are notified (CPS CARD_STATE). simulate-transaction makes a payment with an
        ACTIVE token (--amount with the currency's decimals: 12.50 USD, 1250 JPY, 1.250 KWD), notified to the
        issuer app and the wallet (TNS TRANSACTION_NOTIFICATION); with --authn the cardholder is first asked in
        the issuer app (AUTHN; answer with tokenet issuer-app authn), and a payment nobody answers within 5
        minutes (the TSP's authn_ttl_s) is declined and notified so, as is one the cardholder proceeds with after
        its token was suspended or deleted. transactions lists them with the cardholder's answers (EXPIRED when
        none came in time). request-keys asks the token's wallet to replenish its payment keys (MG REPLENISHMENT).
        """

    static func token(_ word: String) -> PartyAction {
        PartyAction(name: "\(word)-token", valued: ["--reason"]) { flags, command throws(CLIError) in
            let options = try InspectOptions(
                parsing: flags.rest, command: command, operands: 0...1, named: ["DIGITAL_CARD_ID"])
            guard let id = options.operands.first else {
                throw CLIError(.usage, "\(command): missing DIGITAL_CARD_ID (see tokenet tsp tokens)")
            }
            let request = TspV1.ChangeTokenStateRequest(
                digitalCardID: id, action: LifecycleArguments.action(word),
                reasonCode: try LifecycleArguments.reason(flags, command: command))
            return try PartySession.run(
                options, json: flags.json,
                call: { session, callOptions in
                    try await TspV1.TokenLifecycle.Client(session.client).changeTokenState(
                        request, options: callOptions)
                },
                text: { response, traceID in
                    "\(response.digitalCardID): \(PartyText.state(response.previousState)) -> "
                        + "\(PartyText.state(response.tokenState))\n(trace \(traceID))"
                })
        }
    }

    static let simulateTransaction = PartyAction(
        name: "simulate-transaction", valued: ["--card", "--amount", "--merchant", "--currency"],
        switches: ["--json", "--authn"]
    ) { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        guard let card = flags["--card"] else {
            throw CLIError(.usage, "\(command): --card DIGITAL_CARD_ID is required (see tokenet tsp tokens)")
        }
        guard let merchant = flags["--merchant"] else { throw CLIError(.usage, "\(command): --merchant is required") }
        let request = TspV1.SimulateTransactionRequest(
            digitalCardID: card,
            amountMinor: try LifecycleArguments.amountMinor(
                flags["--amount"], currency: flags["--currency"], command: command),
            currency: flags["--currency"] ?? "", merchant: merchant, authn: flags.switches.contains("--authn"))
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await TspV1.Transactions.Client(session.client).simulateTransaction(request, options: callOptions)
            },
            text: { response, traceID in
                (response.authnRequestID.isEmpty
                    ? "\(response.transactionID) approved; its notification is queued for the wallet and the issuer app "
                        + "(each gets it when it is subscribed)"
                    : "\(response.transactionID) waits for the cardholder: authentication request "
                        + response.authnRequestID)
                    + "\n(trace \(traceID))"
            })
    }

    static let transactions = PartyAction(name: "transactions") { flags, command throws(CLIError) in
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...1, named: ["DIGITAL_CARD_ID"])
        let request = TspV1.ListTransactionsRequest(digitalCardID: options.operands.first ?? "")
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await allTransactions(
                    session.client, request, options: PagedListing.options(session, first: callOptions))
            },
            text: { response, _ in transactionTable(response) })
    }

    /// The TSP's transactions as a table, as `tsp transactions` prints them (and the demo).
    static func transactionTable(_ response: TspV1.ListTransactionsResponse) -> String {
        guard !response.transactions.isEmpty else { return "No transactions." }
        return PartyText.table(
            ["TRANSACTION", "DIGITAL CARD", "AMOUNT", "MERCHANT", "APPROVED", "AUTHN"],
            response.transactions.map {
                [
                    $0.transactionID, $0.digitalCardID, CurrencyAmount.format($0.amountMinor, $0.currency),
                    // Waiting for the cardholder is not yet a no.
                    $0.merchant, $0.approved ? "yes" : $0.authnStatus == "PENDING" ? "pending" : "no",
                    $0.authnStatus.isEmpty ? "-" : $0.authnStatus,
                ]
            })
    }

    /// Every page of `ListTransactions`.
    static func allTransactions(
        _ client: any RPCCaller, _ request: TspV1.ListTransactionsRequest, options: () -> CallOptions
    ) async throws -> TspV1.ListTransactionsResponse {
        let transactions = TspV1.Transactions.Client(client)
        return try await PagedListing.all(request, from: "the TSP", options: options) {
            try await transactions.listTransactions($0, options: $1)
        }
    }

    static let requestKeys = PartyAction(name: "request-keys") { flags, command throws(CLIError) in
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...1, named: ["DIGITAL_CARD_ID"])
        guard let id = options.operands.first else {
            throw CLIError(.usage, "\(command): missing DIGITAL_CARD_ID (see tokenet tsp tokens)")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await TspV1.TokenLifecycle.Client(session.client).requestReplenishment(
                    .init(digitalCardID: id), options: callOptions)
            },
            text: { response, traceID in "replenishment request \(response.messageID) queued\n(trace \(traceID))" })
    }
}
