import TokenetRPC
import TokenetWire

/// Strong-authentication enrolment in the demo: the issuer enrols the demo user's account, the code arrives in the
/// outbox, the issuer app activates it (a wrong code first) and sets the PIN, activates the linked accounts in one
/// bulk call, and logs in for an access token. The in-app ID&V flow signs in as the same user with the same PIN.
extension ProvisioningChoreography {
    /// Chloe owns the step-up card whose ID&V methods include the issuer app.
    static let demoUser = "ch-chloe"
    static let demoAccount = "acc-chloe-credit"
    static let demoPIN = "2580"

    func strongAuth(_ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        let (user, account, pin) = (Self.demoUser, Self.demoAccount, Self.demoPIN)
        let enrolled = try nodes.call(.issuer, "issuer enroll \(user) \(account)", report) { client, options in
            try await IssuerV1.IssuerEnrolment.Client(client).enroll(
                .init(userID: user, accountID: account), options: options)
        }
        let reference = enrolled.referenceID
        let outbox = try nodes.call(.issuer, "issuer outbox --digital-card enrolment:\(reference)", report) {
            client, options in
            try await IssuerV1.IssuerCallCentre.Client(client).outbox(
                .init(digitalCardID: "enrolment:\(reference)"), options: options)
        }
        report(indent(PartyText.outbox(outbox, digitalCardID: "enrolment:\(reference)"), by: 4))
        guard let text = outbox.messages.last?.text, let match = text.firstMatch(of: /code is ([A-Z0-9]+)\s/),
            text.contains("otp://p?u=")
        else {
            throw CLIError(.node, "unexpected outcome: expected an activation code and an otp:// link in the outbox")
        }
        let code = String(match.output.1)
        let wrong = try activate(code: "WRONG2CODE", reference: reference, pin: pin, nodes, report)
        try expect(wrong.result == .incorrectCode, "INCORRECT_CODE for a wrong activation code")
        let activated = try activate(code: code, reference: reference, pin: pin, nodes, report)
        try expect(activated.result == .success && activated.pinSet, "SUCCESS, and the app's PIN set")

        let linked = try nodes.call(.issuer, "issuer-app activate-linked \(user) --pin ****", report) {
            client, options in
            try await IssuerV1.IssuerAppAuth.Client(client).activateLinked(
                .init(userID: user, pin: pin), options: options)
        }
        for result in linked.results {
            report("    \(result.accountID): \(IssuerAppCommand.result(result.result)) \(result.message)")
        }
        try expect(
            !linked.results.isEmpty && linked.results.allSatisfy { $0.result == .success },
            "every linked account activated")
        let accounts = try nodes.call(.issuer, "issuer-app accounts \(user)", report) { client, options in
            try await IssuerV1.IssuerAppAuth.Client(client).accounts(.init(userID: user), options: options)
        }
        report("    " + accounts.accounts.map(\.accountID).joined(separator: ", "))
        try expect(accounts.accounts.count == 1 + linked.results.count && accounts.pinSet, "every account in the app")

        let login = try nodes.call(.issuer, "issuer-app login \(user) --pin ****", report) { client, options in
            try await IssuerV1.IssuerAppAuth.Client(client).login(.init(userID: user, pin: pin), options: options)
        }
        report(
            "    logged in on device \(login.deviceID); access token expires \(PartyText.time(ms: login.expiresAtMs))"
        )
        try expect(login.accessToken.hasPrefix("at1."), "an access token")
    }

    private func activate(
        code: String, reference: String, pin: String, _ nodes: Nodes, _ report: (String) -> Void
    ) throws(CLIError) -> IssuerV1.AppActivateResponse {
        let response = try nodes.call(
            .issuer, "issuer-app activate --code \(code) --ref \(reference) --name Credit --pin ****", report
        ) { client, options in
            try await IssuerV1.IssuerAppAuth.Client(client).activate(
                .init(activationCode: code, referenceID: reference, displayName: "Credit", pin: pin), options: options)
        }
        report(
            "    \(IssuerAppCommand.result(response.result))"
                + (response.message.isEmpty ? "" : ": \(response.message)"))
        return response
    }
}
