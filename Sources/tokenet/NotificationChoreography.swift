import Foundation
import TokenetNode
import TokenetRPC
import TokenetWire

/// After provisioning: a payment, a suspend and a resume, and an issuer message, each followed until every party
/// has seen it — the TSP in its records, the wallet in its cards, transactions and inbox, and the issuer app in
/// its notifications and card view (messages travel through the TSP's broker, so each check waits for delivery).
struct NotificationChoreography: DemoChoreography {
    let pkiDirectory: String
    let timeout: Double
    let interruption: DemoInterruption

    typealias Nodes = ProvisioningChoreography.Nodes

    var title: String { "Notifications: a transaction, a suspend and a resume, and a message, seen by every party" }

    func run(cluster: DemoCluster, report: (String) -> Void) throws(CLIError) {
        let nodes = try Nodes(
            cluster: cluster, pkiDirectory: pkiDirectory, timeout: timeout, interruption: interruption)
        let cards = try nodes.call(.wallet, "wallet cards", report) { client, options in
            try await WalletCommand.allCards(client) { options }
        }
        guard let card = cards.cards.first(where: { $0.state == .active && !$0.digitalCardID.isEmpty }) else {
            throw CLIError(.node, "unexpected outcome: expected an ACTIVE digital card in the wallet")
        }
        let id = card.digitalCardID
        report("  using \(card.cardRef) (\(id))")
        try interruption.check()
        try transaction(id, card.cardRef, nodes, report)
        try interruption.check()
        try suspendAndResume(id, card.cardRef, nodes, report)
        try interruption.check()
        try message(id, nodes, report)
    }

    private func transaction(_ id: String, _ cardRef: String, _ nodes: Nodes, _ report: (String) -> Void)
        throws(CLIError)
    {
        report("A transaction (TNS TRANSACTION_NOTIFICATION)")
        let paid = try nodes.call(
            .tsp, "tsp simulate-transaction --card \(id) --amount 12.50 --merchant 'Coffee Corner'", report
        ) { client, options in
            try await TspV1.Transactions.Client(client).simulateTransaction(
                .init(digitalCardID: id, amountMinor: 1250, currency: "USD", merchant: "Coffee Corner"),
                options: options)
        }
        report(
            indent(
                "TSP: \(paid.transactionID) "
                    + (paid.authnRequestID.isEmpty
                        ? "approved; notified to the wallet and the issuer app"
                        : "waits for the cardholder (authentication request \(paid.authnRequestID))")))
        let tsp = try nodes.call(.tsp, "tsp transactions \(id)", report) { client, options in
            try await TSPCommand.allTransactions(client, .init(digitalCardID: id)) { options }
        }
        report(indent(TSPCommand.transactionTable(tsp)))
        try expect(tsp.transactions.contains { $0.transactionID == paid.transactionID }, "the TSP to record it")
        let wallet = try poll(.wallet, "wallet transactions \(cardRef)", nodes, report) { client, options in
            try await WalletCommand.allTransactions(client, .init(cardRef: cardRef)) { options }
        } until: {
            $0.transactions.contains { $0.transactionID == paid.transactionID }
        }
        report(indent(PartyText.walletTransactions(wallet)))
        let app = try appNotifications(nodes, report) { notification in
            notification.messageType == "TRANSACTION_NOTIFICATION" && notification.cardID == id
                && notification.lastCallTimestampMs == paid.lastCallTimestampMs
        }
        report(indent(app))
    }

    private func suspendAndResume(_ id: String, _ cardRef: String, _ nodes: Nodes, _ report: (String) -> Void)
        throws(CLIError)
    {
        report(
            "Suspensions by the cardholder in the wallet and by the issuer, each lifted by its own party (CPS "
                + "CARD_STATE)")
        _ = try walletChange(cardRef, .suspend, nodes, report)
        try seenEverywhere(id, cardRef, state: .suspended, nodes, report)
        try issuerChange(id, .suspend, "LOST_CARD", expecting: "the TSP to add the issuer's suspension", nodes, report)
        // The cardholder lifts their own suspension; the issuer's keeps the token SUSPENDED.
        let lifted = try walletChange(cardRef, .resume, nodes, report)
        report("    wallet: \(cardRef) is \(PartyText.state(lifted.card?.state ?? .unspecified))")
        try expect(lifted.card?.state == .suspended, "the token to stay SUSPENDED under the issuer's suspension")
        try issuerChange(id, .resume, "CARD_FOUND", expecting: "the TSP to resume the token", nodes, report)
        try seenEverywhere(id, cardRef, state: .active, nodes, report)
    }

    /// The cardholder's suspend or resume of card `cardRef` in the wallet (reason USER_REQUEST).
    private func walletChange(
        _ cardRef: String, _ action: TspV1.LifecycleAction, _ nodes: Nodes, _ report: (String) -> Void
    ) throws(CLIError) -> WalletV1.WalletChangeCardStateResponse {
        let word = action == .suspend ? "suspend" : "resume"
        return try nodes.call(.wallet, "wallet \(word) \(cardRef) --reason USER_REQUEST", report) { client, options in
            try await WalletV1.WalletLifecycle.Client(client).changeCardState(
                .init(cardRef: cardRef, action: action, reasonCode: "USER_REQUEST"), options: options)
        }
    }

    /// The issuer's suspend or resume of token `id`, its results shown; `expecting` names what a refusal fails.
    private func issuerChange(
        _ id: String, _ action: TspV1.LifecycleAction, _ reason: String, expecting: String, _ nodes: Nodes,
        _ report: (String) -> Void
    ) throws(CLIError) {
        let word = action == .suspend ? "suspend" : "resume"
        let changed = try nodes.call(.issuer, "issuer \(word)-tokens \(id) --reason \(reason)", report) {
            client, options in
            try await IssuerV1.IssuerCardCare.Client(client).changeTokenStates(
                .init(digitalCardIds: [id], action: action, reasonCode: reason), options: options)
        }
        report(indent(PartyText.tokenResults(changed.results)))
        try expect(changed.results.first?.statusCode == 0, expecting)
    }

    /// The TSP's token, the wallet's card, and the issuer app's notification and card view all in `state`.
    private func seenEverywhere(
        _ id: String, _ cardRef: String, state: CardV1.TokenState, _ nodes: Nodes, _ report: (String) -> Void
    ) throws(CLIError) {
        let history = try nodes.call(.tsp, "tsp history \(id)", report) { client, options in
            try await TSPCommand.wholeHistory(client, id) { options }
        }
        try expect(history.token?.state == state, "the TSP's token to be \(PartyText.state(state))")
        if let last = history.events.last {
            report("    TSP: \(PartyText.state(last.toState)) by \(last.actor) (\(last.reason))")
        }
        _ = try poll(.wallet, "wallet cards", nodes, report) { client, options in
            try await WalletCommand.allCards(client) { options }
        } until: {
            $0.cards.contains { $0.cardRef == cardRef && $0.state == state }
        }
        report("    wallet: \(cardRef) is \(PartyText.state(state))")
        let app = try appNotifications(nodes, report) { notification in
            guard notification.messageType == "CARD_STATE", notification.cardID == id,
                case .cardState(let body)? = notification.notification?.body
            else { return false }
            return body.tokenState == state
        }
        report(indent(app))
        let view = try poll(.issuer, "issuer app-view", nodes, report) { client, options in
            try await IssuerV1.IssuerApp.Client(client).cardView(.init(), options: options)
        } until: {
            $0.cards.contains { $0.digitalCardID == id && $0.tokenState == state }
        }
        let updatedBy = view.cards.first { $0.digitalCardID == id }.map { PartyText.updatedBy($0.updatedBy) }
        report("    issuer app: \(id) is \(PartyText.state(state)) (by \(updatedBy ?? "?"))")
    }

    private func message(_ id: String, _ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        report("An issuer message to the cardholder (MESSAGING)")
        let sent = try nodes.call(.issuer, "issuer send-message \(id) --title ... --body ...", report) {
            client, options in
            try await IssuerV1.IssuerCardCare.Client(client).sendMessage(
                .init(
                    digitalCardID: id, title: "Your card is back", body: "Your card was found and works again.",
                    action: "OPEN_CARD_DETAILS"),
                options: options)
        }
        report("    message \(sent.messageID)")
        let inbox = try poll(.wallet, "wallet inbox", nodes, report) { client, options in
            try await WalletCommand.wholeInbox(client) { options }
        } until: {
            $0.notifications.contains { $0.messageID == sent.messageID }
        }
        report(indent(PartyText.notifications(inbox.notifications.filter { $0.messageType == "MESSAGING" })))
        let app = try appNotifications(nodes, report) { $0.notification?.messageID == sent.messageID && $0.processed }
        report(indent(app))
    }

    // MARK: Waiting for delivery

    /// The issuer app's notifications once one matches, printed as the app shows them (the last few).
    private func appNotifications(
        _ nodes: Nodes, _ report: (String) -> Void, matching: @escaping (IssuerV1.AppNotification) -> Bool
    ) throws(CLIError) -> String {
        let response = try poll(.issuer, "issuer-app notifications", nodes, report) { client, options in
            try await IssuerAppCommand.allNotifications(client) { options }
        } until: {
            $0.notifications.contains(where: matching)
        }
        var shown = response
        shown.notifications = Array(response.notifications.filter(matching).suffix(1))
        shown.authnRequests = []
        shown.cardIds = []
        return PartyText.appNotifications(shown)
    }

    /// Asks until `done` holds (delivery through the broker is asynchronous) or the timeout passes; reports the
    /// call once.
    private func poll<Response: Sendable>(
        _ role: NodeRole, _ what: String, _ nodes: Nodes, _ report: (String) -> Void,
        _ body: @escaping @Sendable (RPCClient, CallOptions) async throws -> Response,
        until done: (Response) -> Bool
    ) throws(CLIError) -> Response {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let response = try nodes.call(role, what, { _ in }, body)
            if done(response) {
                report("  [\(role.rawValue)] \(what)")
                return response
            }
            try interruption.check()
            guard Date() < deadline else {
                throw CLIError(.node, "\(role.nodeName) did not see the change within \(timeout) s (\(what))")
            }
            usleep(100_000)
        }
    }

    private func expect(_ condition: Bool, _ what: String) throws(CLIError) {
        guard condition else { throw CLIError(.node, "unexpected outcome: expected \(what)") }
    }

    private func indent(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
    }
}
