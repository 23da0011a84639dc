import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet issuer-app notifications|authn ADDR …`: the messages the TSP's broker delivered to the issuer app and
/// the cardholder's answers to authentication requests, through issuer-node's IssuerAppInbox service.
extension IssuerAppCommand {
    static let notificationActions = [notifications, authn]

    static let notificationHelp = """

        Notifications:
               tokenet issuer-app notifications ADDR [OPTIONS]
               tokenet issuer-app authn ADDR AUTHN_REQUEST_ID --proceed --pin PIN | --cancel [OPTIONS]

        notifications lists every message the issuer app received from the TSP: its type, card, last call time and
        what the app did (a card state refreshed, a transaction shown, a message...). Messages from other senders or
        topics are handed to the app untouched. It also lists the authentication requests (PENDING, then PROCEEDED or
        CANCELLED when answered, or EXPIRED) and the card ids resynchronised after renewals. authn gives the
        cardholder's answer to an authentication request (AUTHN): --proceed or --cancel; the answer goes to the TSP.
        Proceeding authenticates the payment, so the card's cardholder signs in to the app with its PIN first (a
        wrong PIN uses one of its tries; a locked app is RESOURCE_EXHAUSTED; a cardholder who never activated the
        app is NOT_FOUND; a card of an account the app does not hold, while it holds others, is FAILED_PRECONDITION:
        activate that account first); cancelling needs no PIN. A request already answered or expired is refused
        (FAILED_PRECONDITION) without asking the TSP.
        """

    static let notifications = PartyAction(name: "notifications") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await allNotifications(
                    session.client, options: PagedListing.options(session, first: callOptions))
            },
            text: { response, _ in PartyText.appNotifications(response) })
    }

    /// Every page of the app's notifications, authentication requests and card ids, as one response.
    static func allNotifications(_ client: any RPCCaller, options: () -> CallOptions) async throws
        -> IssuerV1.AppNotificationsResponse
    {
        try await PagedListing.all(IssuerV1.AppNotificationsRequest(), from: "the issuer app", options: options) {
            try await IssuerV1.IssuerAppInbox.Client(client).notifications($0, options: $1)
        }
    }

    static let authn = PartyAction(name: "authn", valued: ["--pin"], switches: ["--json", "--proceed", "--cancel"]) {
        flags, command throws(CLIError) in
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...1, named: ["AUTHN_REQUEST_ID"])
        guard let id = options.operands.first else {
            throw CLIError(.usage, "\(command): missing AUTHN_REQUEST_ID (see tokenet issuer-app notifications)")
        }
        let proceed = flags.switches.contains("--proceed")
        guard proceed != flags.switches.contains("--cancel") else {
            throw CLIError(.usage, "\(command): give exactly one of --proceed and --cancel")
        }
        guard proceed == !(flags["--pin"] ?? "").isEmpty else {
            throw CLIError(
                .usage,
                proceed
                    ? "\(command): --proceed needs the app's --pin: proceeding authenticates the payment"
                    : "\(command): --cancel takes no --pin")
        }
        let pin = try flags.secret("--pin", sentWith: options) ?? ""
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerAppInbox.Client(session.client).answerAuthn(
                    .init(authnRequestID: id, proceed: proceed, pin: pin), options: callOptions)
            },
            text: { response, traceID in
                // A proceed on a token suspended or deleted while the request waited declines the payment.
                let declined =
                    response.status == "PROCEEDED" && !response.approved
                    ? ", but the payment is declined: \(response.declineReason)" : ""
                return "\(response.authnRequestID): \(response.status)\(declined)\n(trace \(traceID))"
            })
    }
}

extension PartyText {
    static func appNotifications(_ response: IssuerV1.AppNotificationsResponse) -> String {
        var parts: [String] = []
        if response.notifications.isEmpty {
            parts.append("No notifications.")
        } else {
            parts.append(
                table(
                    ["TYPE", "SENDER", "CARD", "LAST CALL", "WHAT THE APP DID"],
                    response.notifications.map {
                        [
                            $0.processed ? $0.messageType : "(not processed)", $0.notification?.sender ?? "",
                            $0.cardID.isEmpty ? $0.notification?.cardID ?? "" : $0.cardID,
                            time(ms: $0.lastCallTimestampMs), $0.action,
                        ]
                    }))
        }
        if !response.authnRequests.isEmpty {
            // The card each request is for, from the AUTHN message that brought it: the person asked to approve a
            // payment sees which card it is on.
            var cards: [String: String] = [:]
            for entry in response.notifications {
                guard case .authn(let body)? = entry.notification?.body else { continue }
                cards[body.authnRequestID] = entry.notification?.cardID
            }
            parts.append(
                "Authentication requests:\n"
                    + table(
                        ["REQUEST", "CARD", "AMOUNT", "MERCHANT", "STATUS"],
                        response.authnRequests.map {
                            [
                                $0.authnRequestID,
                                $0.digitalCardID.isEmpty ? cards[$0.authnRequestID] ?? "" : $0.digitalCardID,
                                CurrencyAmount.format($0.amountMinor, $0.currency), $0.merchant, $0.status,
                            ]
                        }))
        }
        if !response.cardIds.isEmpty {
            parts.append(
                "Card ids:\n"
                    + table(
                        ["DIGITAL CARD", "CARD", "ENDING", "EXPIRY"],
                        response.cardIds.map { [$0.digitalCardID, $0.cardID, $0.panLast4, $0.expiry] }))
        }
        return parts.joined(separator: "\n")
    }
}
