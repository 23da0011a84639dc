import TokenetRPC
import TokenetWire

/// `tokenet issuer enroll|unlock ADDR USER …`: the issuer backend's operators, through issuer-node's IssuerEnrolment
/// service.
extension IssuerCommand {
    static let enrolmentHelp = """
        Usage: tokenet issuer enroll ADDR USER ACCOUNT [OPTIONS]
               tokenet issuer unlock ADDR USER [--account ID] [OPTIONS]

        enroll registers USER's ACCOUNT (ids from the issuer's fixture, e.g. ch-alice acc-alice-checking) for strong
        authentication with the TSP and sends the activation code to the user: `tokenet issuer outbox ADDR` shows it,
        with its reference id and an otp:// link, for `tokenet issuer-app activate`. unlock unlocks the user's HOTP
        credentials at the TSP (all accounts, or --account ID) after too many wrong codes locked them, and the issuer app
        after five wrong PINs locked it; it says which of them were locked.
        """

    static let enroll = PartyAction(name: "enroll") { flags, command throws(CLIError) in
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...2, named: ["USER", "ACCOUNT"])
        guard options.operands.count == 2 else {
            throw CLIError(.usage, "\(command): expected USER ACCOUNT (e.g. ch-alice acc-alice-checking)")
        }
        let request = IssuerV1.EnrollRequest(userID: options.operands[0], accountID: options.operands[1])
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerEnrolment.Client(session.client).enroll(request, options: callOptions)
            },
            text: { response, traceID in
                "Enrolled \(request.accountID) of \(request.userID): activation code sent to "
                    + "\(response.maskedDestination), reference \(response.referenceID), expires "
                    + "\(PartyText.time(ms: response.expiresAtMs)) (see tokenet issuer outbox).\n(trace \(traceID))"
            })
    }

    static let unlock = PartyAction(name: "unlock", valued: ["--account"]) { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["USER"])
        guard let user = options.operands.first else { throw CLIError(.usage, "\(command): missing USER") }
        let request = IssuerV1.UnlockRequest(userID: user, accountID: flags["--account"] ?? "")
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerEnrolment.Client(session.client).unlockCredentials(
                    request, options: callOptions)
            },
            text: { response, _ in unlockText(response, user: user, account: request.accountID) })
    }

    /// What `unlock` lifted: the issuer app's PIN lock, the TSP's credential locks, or nothing. With `--account`
    /// the credentials counted are that account's alone, and "nothing of USER was locked" was untrue of a user whose
    /// other account's credentials were locked.
    static func unlockText(_ response: IssuerV1.UnlockResponse, user: String, account: String = "") -> String {
        let app = "the issuer app of \(user), locked after too many wrong PINs"
        let whose = account.isEmpty ? user : "account \(account) of \(user)"
        let credentials = "\(response.unlocked) credential(s) of \(whose) at the TSP"
        switch (response.appUnlocked, response.unlocked) {
        case (false, 0) where !account.isEmpty:
            return "Nothing was locked: neither the issuer app of \(user) nor a credential of account \(account) at "
                + "the TSP (other accounts' credentials were not looked at; leave out --account for all of them)."
        case (false, 0): return "Nothing of \(user) was locked: neither the issuer app nor a credential at the TSP."
        case (true, 0): return "Unlocked \(app)."
        case (false, _): return "Unlocked \(credentials)."
        case (true, _): return "Unlocked \(app), and \(credentials)."
        }
    }
}
