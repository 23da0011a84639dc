import Foundation
import TokenetNode
import TokenetRPC
import TokenetWire

/// In-app (APP_TO_APP) activation of a step-up card of the demo user (enrolled in the issuer app by the
/// strong-authentication scenario): the wallet opens the issuer app, the cardholder signs in there with her PIN,
/// the app has the TSP activate the token and answers the wallet, and the issuer app's view follows.
extension ProvisioningChoreography {
    func activateInApp(_ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        let added = try addByHand("card-mc-stepup-app", language: "", nodes, report)
        try expect(added.eligible, "the card to be eligible")
        let accepted = try acceptTerms(added.cardRef, nodes, report)
        let digitalCardID = accepted.card?.digitalCardID ?? ""
        try expect(
            accepted.decision == .requireAdditionalAuthentication && accepted.card?.state == .inactive
                && accepted.idvMethods.contains { $0.type == .appToApp },
            "REQUIRE_ADDITIONAL_AUTHENTICATION with an in-app method")
        try showAppView(digitalCardID, until: .inactive, nodes, report)
        let cardRef = added.cardRef
        let opened = try nodes.call(.wallet, "wallet open-issuer-app \(cardRef)", report) { client, options in
            try await WalletV1.WalletAppToApp.Client(client).openIssuerApp(.init(cardRef: cardRef), options: options)
        }
        report(indent(PartyText.openIssuerApp(opened), by: 4))
        try expect(opened.message == "card ending \(added.panLast4) — sign in to activate", "the app to find the card")
        let sessionID = opened.sessionID
        let signedIn = try nodes.call(.issuer, "issuer-app authorize \(sessionID) --pin ****", report) {
            client, options in
            try await IssuerV1.IssuerAppToApp.Client(client).authorize(
                .init(sessionID: sessionID, pin: Self.demoPIN), options: options)
        }
        report(indent(PartyText.authorizeAppSession(signedIn), by: 4))
        try expect(
            signedIn.result == .approved && signedIn.tokenState == .active && signedIn.walletNotified,
            "the issuer app to activate the token and tell the wallet")
        try showAppView(digitalCardID, until: .active, nodes, report)
        try idvHistory(digitalCardID, actorPrefix: "issuer-app:", nodes, report)
    }

    /// The issuer app's view once it shows the token in `state`: it follows the wallet's events in the background,
    /// so this asks again until then.
    private func showAppView(
        _ digitalCardID: String, until state: CardV1.TokenState, _ nodes: Nodes, _ report: (String) -> Void
    ) throws(CLIError) {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let quiet: (String) -> Void = { _ in }
            let view = try nodes.call(.issuer, "issuer app-view", quiet) { client, options in
                try await IssuerV1.IssuerApp.Client(client).cardView(.init(), options: options)
            }
            if view.cards.contains(where: { $0.digitalCardID == digitalCardID && $0.tokenState == state }) {
                report("  [issuer] issuer app-view")
                report(indent(PartyText.appView(view), by: 4))
                return
            }
            try interruption.check()
            guard Date() < deadline else {
                throw CLIError(
                    .node,
                    "unexpected outcome: the issuer app never showed \(digitalCardID) as \(PartyText.state(state))")
            }
            usleep(50_000)
        }
    }
}
