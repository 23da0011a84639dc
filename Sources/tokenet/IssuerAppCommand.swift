import TokenetRPC
import TokenetWire

/// `tokenet issuer-app activate|accounts|activate-linked|login|delete-account ADDR …`: the issuer app simulated
/// inside issuer-node (one installation per cardholder), through its IssuerAppAuth service.
enum IssuerAppCommand {
    static let subcommand = PartyCommandGroup.subcommand(
        name: "issuer-app",
        summary: "Drive the issuer app: activate accounts, log in, read its notifications, answer AUTHN requests.",
        help: help + "\n" + notificationHelp,
        actions: [activate, accounts, activateLinked, login, deleteAccount, authorize] + notificationActions)

    static let help = """
        Usage: tokenet issuer-app activate ADDR (--code CODE --ref REFERENCE | --link LINK) [--name NAME] [--pin PIN]
                                           [OPTIONS]
               tokenet issuer-app accounts ADDR USER [OPTIONS]
               tokenet issuer-app activate-linked ADDR USER [--pin PIN] [OPTIONS]
               tokenet issuer-app login ADDR USER --pin PIN [OPTIONS]
               tokenet issuer-app delete-account ADDR USER ACCOUNT --pin PIN [OPTIONS]
               tokenet issuer-app authorize ADDR SESSION_ID --pin PIN | --deny [OPTIONS]

        activate enters the activation code and reference id the user received (`tokenet issuer enroll`, then
        `tokenet issuer outbox`), or opens the message's otp:// link, which carries both; the TSP provisions a user
        and a device HOTP credential. The first account sets the app's PIN (4 to 8 digits, no common pattern such as 1234 or 1212); later
        accounts need that PIN. activate-linked activates all the user's other accounts in one bulk call and prints a
        result per account, once a first account is activated with its code (the code is what proves the user; the
        PIN alone does not). login signs the user in with the PIN and prints the access token's expiry. delete-account removes an account from the app once the PIN signs the
        user in: the TSP revokes its credentials first, so the access tokens they signed in stop working (the account
        stays in the app when the TSP cannot be reached); the PIN stays.
        authorize completes an in-app (APP_TO_APP) activation the wallet opened (`tokenet wallet open-issuer-app`
        printed SESSION_ID): with --pin the app signs the cardholder in, has the TSP activate the token and tells
        the wallet approved (a failed sign-in leaves the session open, as does a card of an account the app does
        not hold while it holds others: activate that account first); with --deny the wallet hears failure.

        Options:
          --code CODE          The activation code.
          --ref REFERENCE      The activation's reference id.
          --link LINK          The otp:// link of the activation message, instead of --code and --ref.
          --name NAME          The name the account gets in the app (default: its id).
          --pin PIN            The app's PIN. --pin - reads it from standard input (asked for at a terminal,
                               without echo), so it is not on the command line, where ps shows it to every user;
                               so does --code -.
          --deny               authorize: decline instead of signing in.
          --json               Print the raw response as proto3 JSON.
        \(InspectOptions.partyConnectionHelp)
        Without --deadline these commands give up after \(PartySession.defaultDeadline.components.seconds) s.

        Exit status: 0 when the call was answered (an activation refused prints its result, e.g. INCORRECT_CODE, and
        why); 64 + the status code otherwise, printed as "ERROR: CODE: message" on stderr (a wrong PIN is
        UNAUTHENTICATED, a locked credential RESOURCE_EXHAUSTED) with "(trace ID)", the call's trace id in the nodes'
        logs, after it; 1 when the issuer cannot be reached or a TLS file (--cacert, --cert, --key) cannot be used; 2
        for bad options.
        """

    static let activate = PartyAction(name: "activate", valued: ["--code", "--ref", "--link", "--name", "--pin"]) {
        flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        let link = flags["--link"] ?? ""
        guard !link.isEmpty || (flags["--code"] != nil && flags["--ref"] != nil) else {
            throw CLIError(.usage, "\(command): --code and --ref, or --link, are required (see tokenet issuer outbox)")
        }
        // The link carries the code and the reference: given beside them, the command's answer was about the link
        // alone, and a code given correctly was dropped without a word.
        guard link.isEmpty || (flags["--code"] == nil && flags["--ref"] == nil) else {
            throw CLIError(
                .usage,
                "\(command): --link carries the code and the reference; give --link, or --code and --ref, not both")
        }
        let request = IssuerV1.AppActivateRequest(
            activationCode: try flags.secret("--code", sentWith: options) ?? "",
            referenceID: flags["--ref"] ?? "",
            displayName: flags["--name"] ?? "",
            pin: try flags.secret("--pin", sentWith: options) ?? "", link: link)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerAppAuth.Client(session.client).activate(request, options: callOptions)
            },
            text: { response, traceID in
                guard response.result == .success else {
                    return "\(result(response.result)): \(response.message)\n(trace \(traceID))"
                }
                return "Activated \(response.accountID) for \(response.userID)"
                    + (response.pinSet ? "; the app's PIN is set." : ".") + "\n(trace \(traceID))"
            })
    }

    static let accounts = PartyAction(name: "accounts") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["USER"])
        guard let user = options.operands.first else { throw CLIError(.usage, "\(command): missing USER") }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerAppAuth.Client(session.client).accounts(
                    .init(userID: user), options: callOptions)
            },
            text: { response, _ in
                let pin =
                    response.pinLocked
                    ? "PIN set; the app is locked after too many wrong PINs (tokenet issuer unlock ADDR \(user))."
                    : response.pinSet ? "PIN set." : "No PIN set yet."
                guard !response.accounts.isEmpty else { return "No account is activated in \(user)'s app. \(pin)" }
                return PartyText.table(
                    ["ACCOUNT", "NAME", "ACTIVATED"],
                    response.accounts.map { [$0.accountID, $0.displayName, PartyText.time(ms: $0.activatedAtMs)] })
                    + "\n\(pin)"
            })
    }

    static let activateLinked = PartyAction(name: "activate-linked", valued: ["--pin"]) {
        flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["USER"])
        guard let user = options.operands.first else { throw CLIError(.usage, "\(command): missing USER") }
        let request = IssuerV1.ActivateLinkedRequest(
            userID: user, pin: try flags.secret("--pin", sentWith: options) ?? "")
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerAppAuth.Client(session.client).activateLinked(request, options: callOptions)
            },
            text: { response, traceID in
                guard !response.results.isEmpty else {
                    return "Every account of \(user) is already activated.\n(trace \(traceID))"
                }
                return PartyText.table(
                    ["ACCOUNT", "RESULT", "MESSAGE"],
                    response.results.map { [$0.accountID, result($0.result), $0.message] })
                    + (response.pinSet ? "\nThe app's PIN is set." : "") + "\n(trace \(traceID))"
            })
    }

    static let login = PartyAction(name: "login", valued: ["--pin"]) { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["USER"])
        guard let user = options.operands.first else { throw CLIError(.usage, "\(command): missing USER") }
        guard let pin = try flags.secret("--pin", sentWith: options) else {
            throw CLIError(.usage, "\(command): --pin is required")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerAppAuth.Client(session.client).login(
                    .init(userID: user, pin: pin), options: callOptions)
            },
            text: { response, traceID in
                "Logged in \(user) with \(response.accountID) on device \(response.deviceID); access token "
                    + "\(response.accessToken.prefix(12))… expires \(PartyText.time(ms: response.expiresAtMs)).\n"
                    + "(trace \(traceID))"
            })
    }

    static let deleteAccount = PartyAction(name: "delete-account", valued: ["--pin"]) {
        flags, command throws(CLIError) in
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...2, named: ["USER", "ACCOUNT"])
        guard options.operands.count == 2 else { throw CLIError(.usage, "\(command): expected USER ACCOUNT") }
        guard let pin = try flags.secret("--pin", sentWith: options) else {
            throw CLIError(.usage, "\(command): --pin is required")
        }
        let request = IssuerV1.AppDeleteAccountRequest(
            userID: options.operands[0], accountID: options.operands[1], pin: pin)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerAppAuth.Client(session.client).deleteAccount(request, options: callOptions)
            },
            text: { response, traceID in
                "Removed \(request.accountID); \(response.accountsLeft) account(s) left, the PIN stays.\n"
                    + "(trace \(traceID))"
            })
    }

    /// `INCORRECT_CODE` for `ACTIVATION_RESULT_INCORRECT_CODE`.
    static func result(_ result: TspV1.ActivationResult) -> String {
        let name = result.protoValueName ?? "\(result)"
        return name.hasPrefix("ACTIVATION_RESULT_") ? String(name.dropFirst("ACTIVATION_RESULT_".count)) : name
    }
}
