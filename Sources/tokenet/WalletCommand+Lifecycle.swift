import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet wallet suspend|resume|delete|transactions|inbox|keys|pay ADDR …`: the person using the wallet acts on a
/// digital card and reads what the TSP pushed, through wallet-node's WalletLifecycle service (as the operator).
extension WalletCommand {
    static let lifecycleActions = [
        changeState("suspend"), changeState("resume"), changeState("delete"), transactions, inbox, keys, pay,
    ]

    static let lifecycleHelp = """

        Lifecycle and notifications:
               tokenet wallet suspend|resume|delete ADDR CARD_REF --reason CODE [OPTIONS]
               tokenet wallet transactions ADDR [CARD_REF] [OPTIONS]
               tokenet wallet inbox ADDR [OPTIONS]
               tokenet wallet keys ADDR CARD_REF [OPTIONS]
               tokenet wallet pay ADDR CARD_REF [OPTIONS]

        suspend, resume and delete ask the TSP to change the card's token (the reason code, e.g. USER_REQUEST, is
        kept in its audit trail); the TSP notifies the issuer app. A card that never got a token (T&C not accepted,
        or DECLINED) or whose token has ended (DEACTIVATED) is removed from the wallet by delete, with no TSP call;
        one whose digitization has no answer yet is refused (run accept-terms again first). suspend and resume
        refuse a token that has ended without asking the TSP. transactions lists the transactions the TSP notified,
        inbox the messages the wallet received from the TSP's broker (its newest 10,000). keys shows the card's
        limited-use payment keys; pay spends one, and the wallet asks the TSP for a new batch when few are left.
        """

    static func changeState(_ word: String) -> PartyAction {
        PartyAction(name: word, valued: ["--reason"]) { flags, command throws(CLIError) in
            let options = try InspectOptions(
                parsing: flags.rest, command: command, operands: 0...1, named: ["CARD_REF"])
            guard let cardRef = options.operands.first else {
                throw CLIError(.usage, "\(command): missing CARD_REF (the card-N that add-card printed)")
            }
            let request = WalletV1.WalletChangeCardStateRequest(
                cardRef: cardRef, action: LifecycleArguments.action(word),
                reasonCode: try LifecycleArguments.reason(flags, command: command))
            return try PartySession.run(
                options, json: flags.json,
                call: { session, callOptions in
                    try await WalletV1.WalletLifecycle.Client(session.client).changeCardState(
                        request, options: callOptions)
                },
                text: { response, traceID in
                    let card = response.card ?? .init()
                    guard !response.removed else {
                        let why =
                            card.state == .deactivated
                            ? "its token \(card.digitalCardID) had already ended (DEACTIVATED)"
                            : "it had no token (\(card.status))"
                        return "\(card.cardRef) is removed from the wallet: \(why), so the TSP was not asked\n"
                            + "(trace \(traceID))"
                    }
                    return "\(card.cardRef) (\(card.digitalCardID)) is now \(PartyText.state(card.state))\n"
                        + "(trace \(traceID))"
                })
        }
    }

    static let transactions = PartyAction(name: "transactions") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["CARD_REF"])
        let request = WalletV1.WalletTransactionsRequest(cardRef: options.operands.first ?? "")
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await allTransactions(
                    session.client, request, options: PagedListing.options(session, first: callOptions))
            },
            text: { response, _ in PartyText.walletTransactions(response) })
    }

    /// Every page of `ListTransactions`.
    static func allTransactions(
        _ client: any RPCCaller, _ request: WalletV1.WalletTransactionsRequest, options: () -> CallOptions
    ) async throws -> WalletV1.WalletTransactionsResponse {
        let lifecycle = WalletV1.WalletLifecycle.Client(client)
        return try await PagedListing.all(request, from: "the wallet", options: options) {
            try await lifecycle.listTransactions($0, options: $1)
        }
    }

    static let inbox = PartyAction(name: "inbox") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await wholeInbox(session.client, options: PagedListing.options(session, first: callOptions))
            },
            text: { response, _ in PartyText.notifications(response.notifications) })
    }

    /// Every page of `Inbox`.
    static func wholeInbox(_ client: any RPCCaller, options: () -> CallOptions) async throws
        -> WalletV1.WalletInboxResponse
    {
        let lifecycle = WalletV1.WalletLifecycle.Client(client)
        return try await PagedListing.all(WalletV1.WalletInboxRequest(), from: "the wallet", options: options) {
            try await lifecycle.inbox($0, options: $1)
        }
    }

    static let keys = keysAction("keys")
    static let pay = keysAction("pay")

    static func keysAction(_ word: String) -> PartyAction {
        PartyAction(name: word) { flags, command throws(CLIError) in
            let options = try InspectOptions(
                parsing: flags.rest, command: command, operands: 0...1, named: ["CARD_REF"])
            guard let cardRef = options.operands.first else {
                throw CLIError(.usage, "\(command): missing CARD_REF (the card-N that add-card printed)")
            }
            return try PartySession.run(
                options, json: flags.json,
                call: { session, callOptions in
                    let client = WalletV1.WalletLifecycle.Client(session.client)
                    return word == "pay"
                        ? try await client.usePaymentKey(.init(cardRef: cardRef), options: callOptions)
                        : try await client.paymentKeys(.init(cardRef: cardRef), options: callOptions)
                },
                text: { response, traceID in
                    // A payment may fetch a batch from the TSP: its trace id finds that in the nodes' logs.
                    PartyText.paymentKeys(response, paid: word == "pay") + (word == "pay" ? "\n(trace \(traceID))" : "")
                })
        }
    }
}

extension PartyText {
    /// What is left of a card's payment keys, and for `pay` that one was spent (the count alone read the same before
    /// and after a payment); the threshold said as the wallet uses it.
    static func paymentKeys(_ response: WalletV1.PaymentKeysResponse, paid: Bool) -> String {
        let left = response.keysRemaining == 1 ? "1 payment key left" : "\(response.keysRemaining) payment keys left"
        let batches = response.batches == 1 ? "1 batch" : "\(response.batches) batches"
        // Keys come to an ACTIVE token only: "fetches a new batch at 3 or fewer" under a deleted card promised keys
        // that would never come.
        let when =
            switch response.tokenState {
            case .deactivated: "the token is DEACTIVATED: it gets no more keys"
            case .suspended: "the token is SUSPENDED: no batch is fetched until it is resumed"
            case .inactive: "the token is INACTIVE: its first batch comes once it is activated"
            default: "the wallet fetches a new batch at \(response.threshold) or fewer"
            }
        return "\(response.cardRef): \(paid ? "paid with one payment key; " : "")\(left) (\(when); \(batches) so far)"
            + (response.replenished ? "; a new batch was fetched" : "")
            + (response.replenishmentProblem.isEmpty
                ? ""
                : "\nwarning: the new batch could not be fetched (\(response.replenishmentProblem)); the next "
                    + "payment asks again")
    }

    static func walletTransactions(_ response: WalletV1.WalletTransactionsResponse) -> String {
        guard !response.transactions.isEmpty else { return "No transactions." }
        return table(
            ["TRANSACTION", "DIGITAL CARD", "AMOUNT", "MERCHANT", "APPROVED", "AT", "LAST CALL"],
            response.transactions.map {
                [
                    $0.transactionID, $0.digitalCardID, CurrencyAmount.format($0.amountMinor, $0.currency),
                    $0.merchant, $0.approved ? "yes" : "no", time(ms: $0.transactionAtMs),
                    time(ms: $0.lastCallTimestampMs),
                ]
            })
    }

    /// One line per broker message: sender, type, card and what it says.
    static func notifications(_ notifications: [TspV1.Notification]) -> String {
        guard !notifications.isEmpty else { return "No notifications." }
        return table(
            ["SENDER", "TYPE", "DIGITAL CARD", "CONTENT"],
            notifications.map { [$0.sender, $0.messageType, $0.cardID, content($0)] })
    }

    /// Why a payment was declined, when its authentication says: the cardholder's cancel, nobody's answer, or a
    /// proceed that came after its token was suspended or deleted.
    static func declined(_ body: TspV1.TransactionBody) -> String {
        switch body.authnStatus {
        case "CANCELLED": "declined: the cardholder cancelled it"
        case "EXPIRED": "declined: its authentication request expired unanswered"
        case "PROCEEDED": "declined: its token was no longer active when the cardholder proceeded"
        default: "declined"
        }
    }

    static func content(_ notification: TspV1.Notification) -> String {
        switch notification.body {
        case .cardState(let body)?:
            return "\(state(body.tokenState)) (\(body.reasonCode) by \(body.initiator)\(body.heldSuspensionsShown))"
        case .replenishment(let body)?:
            // The TSP's push (`tsp request-keys`) carries no batch: it asks the wallet to fetch one.
            guard body.keysIssued > 0 else { return "the TSP asks for a new batch of payment keys" }
            return "\(body.keysIssued) keys issued, \(body.keysRemainingBefore) left before"
        case .transaction(let body)?:
            return "\(CurrencyAmount.format(body.amountMinor, body.currency)) at \(body.merchant)"
                + (body.approved ? "" : " (\(declined(body)))")
        case .authn(let body)?:
            return "authenticate \(CurrencyAmount.format(body.amountMinor, body.currency)) at \(body.merchant)"
        case .cardRenewal(let body)?:
            return "renewed: \(body.previousCardID) -> \(body.newCardID), ending \(body.panLast4), \(body.expiry)"
        case .messaging(let body)?:
            return "\(body.title): \(body.body)" + (body.action.isEmpty ? "" : " [\(body.action)]")
        case .standInAdvice(let body)?:
            let decision = body.decision.protoValueName ?? "\(body.decision.rawValue)"
            return "stand-in \(decision) for the card ending \(body.maskedPAN.filter(\.isNumber).suffix(4))"
        case .opaque(let bytes)?:
            return "\(bytes.count) bytes"
        case nil:
            return ""
        }
    }
}
