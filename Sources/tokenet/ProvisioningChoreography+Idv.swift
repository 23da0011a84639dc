import TokenetNode
import TokenetRPC
import TokenetWire

/// ID&V for a step-up token: a one-time code read from the issuer's outbox, or the issuer's call centre.
extension ProvisioningChoreography {
    /// Picks otp-sms, reads the code the issuer sent, submits a wrong one and then the right one.
    func activateByOTP(
        _ accepted: WalletV1.AcceptTermsResponse, _ nodes: Nodes, _ report: (String) -> Void
    ) throws(CLIError) {
        let card = accepted.card ?? WalletV1.WalletCard()
        let (cardRef, digitalCardID) = (card.cardRef, card.digitalCardID)
        let selected = try nodes.call(.wallet, "wallet select-method \(cardRef) otp-sms", report) { client, options in
            try await WalletV1.WalletIdv.Client(client).selectIdvMethod(
                .init(cardRef: cardRef, methodID: "otp-sms"), options: options)
        }
        report(indent(PartyText.selectMethod(selected), by: 4))
        try expect(selected.codeSent, "the issuer to send a code")
        let outbox = try nodes.call(.issuer, "issuer outbox --digital-card \(digitalCardID)", report) {
            client, options in
            try await IssuerV1.IssuerCallCentre.Client(client).outbox(
                .init(digitalCardID: digitalCardID), options: options)
        }
        report(indent(PartyText.outbox(outbox, digitalCardID: digitalCardID), by: 4))
        guard let text = outbox.messages.last?.text, let match = text.firstMatch(of: /is (\d{6})\./) else {
            throw CLIError(.node, "unexpected outcome: expected a code in the issuer's outbox")
        }
        let code = String(match.output.1)
        let wrongCode = code == "000000" ? "111111" : "000000"
        let wrong = try nodes.call(.wallet, "wallet submit-otp \(cardRef) \(wrongCode)", report) { client, options in
            try await WalletV1.WalletIdv.Client(client).submitOTP(
                .init(cardRef: cardRef, code: wrongCode), options: options)
        }
        report(indent(PartyText.submitOTP(wrong), by: 4))
        try expect(wrong.result == .incorrectCode && wrong.triesLeft == 2, "INCORRECT_CODE with 2 tries left")
        let right = try nodes.call(.wallet, "wallet submit-otp \(cardRef) \(code)", report) { client, options in
            try await WalletV1.WalletIdv.Client(client).submitOTP(.init(cardRef: cardRef, code: code), options: options)
        }
        report(indent(PartyText.submitOTP(right), by: 4))
        try expect(right.result == .success && right.card?.state == .active, "SUCCESS and an ACTIVE token")
        try idvHistory(digitalCardID, actorPrefix: "wallet:", nodes, report)
    }

    /// The by-score card steps up for the demo wallet's risk score of 3; the cardholder picks the call centre and
    /// the issuer's operator activates the token.
    func callCentre(_ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        let added = try addByHand("card-mc-score", language: "", nodes, report)
        try expect(added.eligible, "the card to be eligible")
        let accepted = try acceptTerms(added.cardRef, nodes, report)
        try expect(
            accepted.decision == .requireAdditionalAuthentication && accepted.card?.state == .inactive
                && accepted.idvMethods.contains { $0.id == "call-center" },
            "REQUIRE_ADDITIONAL_AUTHENTICATION with a call-centre method")
        let (cardRef, digitalCardID) = (added.cardRef, accepted.card?.digitalCardID ?? "")
        let selected = try nodes.call(.wallet, "wallet select-method \(cardRef) call-center", report) {
            client, options in
            try await WalletV1.WalletIdv.Client(client).selectIdvMethod(
                .init(cardRef: cardRef, methodID: "call-center"), options: options)
        }
        report(indent(PartyText.selectMethod(selected), by: 4))
        let activated = try nodes.call(.issuer, "issuer activate-token \(digitalCardID)", report) { client, options in
            try await IssuerV1.IssuerCallCentre.Client(client).activateToken(
                .init(digitalCardID: digitalCardID), options: options)
        }
        report(indent(PartyText.activateToken(activated, digitalCardID: digitalCardID), by: 4))
        try expect(activated.tokenState == .active && activated.changed, "the call centre to activate the token")
        try idvHistory(digitalCardID, actorPrefix: "issuer:", nodes, report)
    }

    /// The TSP's audit trail after ID&V: ACTIVE, changed by the party that verified the cardholder.
    func idvHistory(
        _ id: String, actorPrefix: String, _ nodes: Nodes, _ report: (String) -> Void
    ) throws(CLIError) {
        let history = try nodes.call(.tsp, "tsp history \(id)", report) { client, options in
            try await TSPCommand.wholeHistory(client, id) { options }
        }
        report(indent(PartyText.history(history), by: 4))
        try expect(history.token?.state == .active, "the TSP's token to be ACTIVE")
        try expect(
            history.events.last?.actor.hasPrefix(actorPrefix) == true, "the last change to be by \(actorPrefix)…")
    }
}
