import TokenetNode
import TokenetRPC
import TokenetWire

/// The scenarios, each with the fixture card it uses and the outcome the fixture's rules promise.
extension ProvisioningChoreography {
    func manualApproved(_ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        let added = try addByHand("card-visa-approve", language: "es", nodes, report)
        try expect(added.eligible, "the card to be eligible")
        try expect(added.terms?.language.hasPrefix("es") == true, "the T&C in Spanish")
        let accepted = try acceptTerms(added.cardRef, nodes, report)
        try expect(accepted.decision == .approved && accepted.card?.state == .active, "APPROVED and an ACTIVE token")
        try tspView(accepted, nodes, report, finalState: .active)
    }

    func pushReceipt(_ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        let pushed = try nodes.call(.issuer, "issuer push-card card-mc-receipt --mode receipt", report) {
            client, options in
            try await IssuerV1.IssuerControl.Client(client).pushCard(
                .init(cardID: "card-mc-receipt", mode: .receipt), options: options)
        }
        guard case .receipt(let receipt)? = pushed.result else {
            throw CLIError(.node, "unexpected outcome: expected a push receipt from the issuer")
        }
        report("    receipt \(receipt.payload) (expires \(PartyText.time(ms: receipt.expiresAtMs)))")
        let added = try nodes.call(.wallet, "wallet add-card --receipt \(receipt.payload) --scheme mastercard", report)
        {
            client, options in
            try await WalletV1.WalletControl.Client(client).addCard(
                .init(source: .pushReceipt(.init(scheme: receipt.scheme, payload: receipt.payload))), options: options)
        }
        report(summary(added))
        try expect(added.eligible && added.scheme == .mastercard, "an eligible Mastercard card")
        let accepted = try acceptTerms(added.cardRef, nodes, report)
        try expect(accepted.decision == .approved && accepted.card?.state == .active, "APPROVED and an ACTIVE token")
        try tspView(accepted, nodes, report, finalState: .active)
    }

    func pushSession(_ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        let pushed = try nodes.call(.issuer, "issuer push-card card-visa-session --mode session", report) {
            client, options in
            try await IssuerV1.IssuerControl.Client(client).pushCard(
                .init(cardID: "card-visa-session", mode: .session), options: options)
        }
        guard case .pushSessionID(let sessionID)? = pushed.result else {
            throw CLIError(.node, "unexpected outcome: expected a push session id from the wallet backend")
        }
        report("    push session \(sessionID)")
        let added = try nodes.call(.wallet, "wallet add-card --push-session \(sessionID)", report) { client, options in
            try await WalletV1.WalletControl.Client(client).addCard(
                .init(source: .pushSessionID(sessionID)), options: options)
        }
        report(summary(added))
        try expect(added.eligible, "the pushed card to be eligible")
        let accepted = try acceptTerms(added.cardRef, nodes, report)
        try expect(accepted.decision == .approved && accepted.card?.state == .active, "APPROVED and an ACTIVE token")
        try tspView(accepted, nodes, report, finalState: .active)
    }

    func declined(_ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        let added = try addByHand("card-mc-decline", language: "", nodes, report)
        try expect(added.eligible, "the card to be eligible (the issuer declines at digitization)")
        let accepted = try acceptTerms(added.cardRef, nodes, report)
        try expect(
            accepted.decision == .declined && !accepted.declineReason.isEmpty && accepted.card?.status == "DECLINED",
            "DECLINED with the issuer's reason")
        // The wallet gets no digital card for a declined card; the TSP keeps the token it made, deactivated.
        let tokens = try nodes.call(.tsp, "tsp tokens", report) { client, options in
            try await TSPCommand.allTokens(client) { options }
        }
        guard let token = tokens.tokens.last(where: { $0.panLast4 == added.panLast4 }) else {
            throw CLIError(.node, "unexpected outcome: expected the TSP to keep the declined card's token")
        }
        report(indent(PartyText.tokens(TspV1.ListTokensResponse(tokens: [token])), by: 4))
        try tspView(token.digitalCardID, nodes, report, finalState: .deactivated)
    }

    func stepUp(_ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        let added = try addByHand("card-visa-stepup", language: "", nodes, report)
        try expect(added.eligible, "the card to be eligible")
        let accepted = try acceptTerms(added.cardRef, nodes, report)
        try expect(
            accepted.decision == .requireAdditionalAuthentication && accepted.card?.state == .inactive
                && !accepted.idvMethods.isEmpty,
            "REQUIRE_ADDITIONAL_AUTHENTICATION, an INACTIVE token and the issuer's ID&V methods")
        try tspView(accepted, nodes, report, finalState: .inactive)
        try activateByOTP(accepted, nodes, report)
    }

    func notEligible(_ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        let added = try addByHand("card-visa-not-eligible", language: "", nodes, report)
        try expect(!added.eligible && added.cardRef.isEmpty, "the card not to be eligible, and not kept")
    }

    // MARK: Steps

    func addByHand(
        _ id: String, language: String, _ nodes: Nodes, _ report: (String) -> Void
    ) throws(CLIError) -> WalletV1.AddCardResponse {
        let card = try fixture.card(id)
        let flags = language.isEmpty ? "" : " --language \(language)"
        let manual = WalletV1.ManualCard(
            pan: card.pan, expiry: card.expiry, cvc: card.cvc, cardholderName: card.cardholderName)
        let added = try nodes.call(.wallet, "wallet add-card --pan \(card.masked) --exp \(card.expiry)\(flags)", report)
        {
            client, options in
            try await WalletV1.WalletControl.Client(client).addCard(
                .init(language: language, source: .manual(manual)), options: options)
        }
        report(summary(added))
        return added
    }

    func acceptTerms(
        _ cardRef: String, _ nodes: Nodes, _ report: (String) -> Void
    ) throws(CLIError) -> WalletV1.AcceptTermsResponse {
        let accepted = try nodes.call(.wallet, "wallet accept-terms \(cardRef)", report) { client, options in
            try await WalletV1.WalletControl.Client(client).acceptTerms(.init(cardRef: cardRef), options: options)
        }
        report(indent(PartyText.acceptTerms(accepted), by: 4))
        return accepted
    }

    /// The TSP's audit trail of the new token; its last change must be the issuer's, to the expected state.
    private func tspView(
        _ accepted: WalletV1.AcceptTermsResponse, _ nodes: Nodes, _ report: (String) -> Void,
        finalState: CardV1.TokenState
    ) throws(CLIError) {
        try tspView(accepted.card?.digitalCardID ?? "", nodes, report, finalState: finalState)
    }

    func tspView(
        _ id: String, _ nodes: Nodes, _ report: (String) -> Void, finalState: CardV1.TokenState
    ) throws(CLIError) {
        let history = try nodes.call(.tsp, "tsp history \(id)", report) { client, options in
            try await TSPCommand.wholeHistory(client, id) { options }
        }
        report(indent(PartyText.history(history), by: 4))
        try expect(history.token?.state == finalState, "the TSP's token to be \(PartyText.state(finalState))")
        try expect(
            history.events.last?.actor.hasPrefix("issuer:") == true, "the issuer (not the stand-in) to have decided")
    }

    /// One line for an AddCard answer: the T&C by id and language, not their full text.
    private func summary(_ added: WalletV1.AddCardResponse) -> String {
        let card = PartyText.card(added.scheme, last4: added.panLast4)
        guard added.eligible else { return "    not eligible: \(card): \(added.reason)" }
        guard let terms = added.terms else { return "    \(added.cardRef): \(card) is eligible; no T&C to accept" }
        let excerpt = terms.text.count > 60 ? terms.text.prefix(57) + "..." : Substring(terms.text)
        return "    \(added.cardRef): \(card) is eligible; T&C \(terms.id) v\(terms.version) (\(terms.language)): "
            + "\"\(excerpt)\""
    }
}
