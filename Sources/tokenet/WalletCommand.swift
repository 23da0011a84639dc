import TokenetCard
import TokenetRPC
import TokenetWire

/// `tokenet wallet add-card|accept-terms|cards ADDR …`: what a person does in the wallet app, sent to a
/// wallet-node's WalletControl service (as the operator).
enum WalletCommand {
    static let subcommand = PartyCommandGroup.subcommand(
        name: "wallet",
        summary: "Add cards to a wallet-node, accept their T&C (digitize), ID&V with one-time codes, list its cards.",
        help: help + "\n" + lifecycleHelp,
        actions: [
            addCard, acceptTerms, cards, sync, selectMethod, submitOTP, resendOTP, openIssuerApp, useAccount,
            selectCard,
        ]
            + lifecycleActions)

    static let help = """
        Usage: tokenet wallet add-card ADDR --pan PAN --exp MM/YY [--cvc CVC] [--name NAME] [OPTIONS]
               tokenet wallet add-card ADDR --receipt PAYLOAD --scheme mastercard [OPTIONS]
               tokenet wallet add-card ADDR --push-session ID [OPTIONS]
               tokenet wallet accept-terms ADDR CARD_REF [OPTIONS]
               tokenet wallet cards ADDR [OPTIONS]
               tokenet wallet sync ADDR [OPTIONS]
               tokenet wallet select-method ADDR CARD_REF METHOD_ID [OPTIONS]
               tokenet wallet submit-otp ADDR CARD_REF CODE [OPTIONS]
               tokenet wallet resend-otp ADDR CARD_REF [OPTIONS]
               tokenet wallet open-issuer-app ADDR CARD_REF [--caller ID] [OPTIONS]
               tokenet wallet use-account ADDR WALLET_ACCOUNT [OPTIONS]
               tokenet wallet select-card ADDR CARD_REF [OPTIONS]

        add-card checks with the TSP whether a card can be digitized into the wallet at ADDR (HOST:PORT) and prints
        its reference (card-N) and the T&C to accept. The card comes typed in (--pan, --exp; the number may be in
        groups, as printed: "4111 1111 1111 1111"; the wallet encrypts it to the TSP's key and keeps only its last
        four digits), as an issuer's push receipt (--receipt, --scheme; Mastercard only), or as a push session an
        issuer created through the wallet's backend (--push-session).
        accept-terms accepts the T&C of card-N and digitizes it: the issuer approves (token ACTIVE), declines, or
        asks for additional authentication (token INACTIVE, with the ID&V methods). cards lists the wallet's cards,
        and under them why a card was declined, or its token not activated in the issuer app.
        sync brings them in line with the TSP now, as the wallet does each time its notification stream to the TSP
        opens: it sends again the Digitize of each card left DIGITIZING, then takes each token state and last four
        digits the TSP holds that the wallet missed (their notification dropped while the wallet was away).
        select-method picks one of those ID&V methods: an OTP method has the issuer send a one-time code (asking
        again sends nothing new; another OTP method sends a new code by it, in place of the one out); submit-otp
        enters the code (3 tries a code; a right code makes the token ACTIVE); resend-otp asks for a new code (a
        few times at most). For CALL_CENTER the issuer's operator activates the token (tokenet issuer
        activate-token). open-issuer-app opens the issuer app for an APP_TO_APP method with
        the wallet's caller identity and activation data (--caller overrides the caller) and prints the app's
        session, which the cardholder completes there (tokenet issuer-app authorize). use-account makes another
        wallet account active and select-card selects one of its cards, as the person does in the wallet
        app; the issuer app's card-data-changed listener hears each change (tokenet issuer app-view).

        Wallet accounts: add-card adds the card to the active wallet account; the card stays in it (cards shows
        each card's account), also when another account becomes active before accept-terms. A push session the
        issuer creates without --wallet-account is for the active account too. Each account has its own
        selected card: use-account answers with the one of the account it makes active (none until one of its
        cards is selected). The wallet keeps the active account and the selected cards across restarts; a new
        wallet starts on the account of its wallet.json ("walletAccountId", default wallet-account-1).

        --pan - and --cvc - read the card number and CVC from standard input, a line each in the order given (asked
        for at a terminal, without echo), so that they are not on the command line, where ps shows them to every
        user, nor in the shell's history.

        Options:
          --language TAG       BCP-47 language of the T&C, such as es-ES (default: English).
          --input-method M     manual (default with --pan), camera or on-file.
          --json               Print the raw response as proto3 JSON.
        \(InspectOptions.partyConnectionHelp)
        Without --deadline these commands give up after \(PartySession.defaultDeadline.components.seconds) s.

        Exit status: 0 when the wallet answered (an ineligible card included); 64 + the status code otherwise, printed
        as "ERROR: CODE: message" on stderr with "(trace ID)", the call's trace id in the nodes' logs, after it; 1
        when the wallet cannot be reached or a TLS file (--cacert, --cert, --key) cannot be used; 2 for bad options.

        Example:
          export TOKENET_CACERT=pki/ca.pem TOKENET_CERT=pki/operator.pem TOKENET_KEY=pki/operator.key
          tokenet wallet add-card 127.0.0.1:7003 --pan 4761000010000009 --exp 12/29 --cvc 123 --language es
          tokenet wallet accept-terms 127.0.0.1:7003 card-1
        """

    static let addCard = PartyAction(
        name: "add-card",
        valued: [
            "--pan", "--exp", "--cvc", "--name", "--language", "--input-method", "--receipt", "--scheme",
            "--push-session",
        ]
    ) { flags, command throws(CLIError) in
        // Options first: a mistyped one (`--pam`) is named, not taken for a missing card source.
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        var draft = try addCardRequest(flags, command: command)
        // Read last: a card number or CVC given as `-` is typed only for a command line that stands.
        if case .manual(var card)? = draft.source {
            card.pan = try flags.secret("--pan", sentWith: options) ?? ""
            card.cvc = try flags.secret("--cvc", sentWith: options) ?? ""
            draft.source = .manual(card)
        }
        let request = draft
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await WalletV1.WalletControl.Client(session.client).addCard(request, options: callOptions)
            },
            text: { response, traceID in
                PartyText.addCard(response, address: "\(options.address)") + "\n(trace \(traceID))"
            })
    }

    static let acceptTerms = PartyAction(name: "accept-terms") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["CARD_REF"])
        guard let cardRef = options.operands.first else {
            throw CLIError(.usage, "\(command): missing CARD_REF (the card-N that add-card printed)")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await WalletV1.WalletControl.Client(session.client).acceptTerms(
                    .init(cardRef: cardRef), options: callOptions)
            },
            text: { response, traceID in
                PartyText.acceptTerms(response, address: "\(options.address)") + "\n(trace \(traceID))"
            })
    }

    static let cards = PartyAction(name: "cards") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await allCards(session.client, options: PagedListing.options(session, first: callOptions))
            },
            text: { response, _ in PartyText.walletCards(response) })
    }

    static let sync = PartyAction(name: "sync") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await WalletV1.WalletControl.Client(session.client).syncWithTsp(.init(), options: callOptions)
            },
            text: { response, traceID in
                "Checked \(response.cardsChecked) \(response.cardsChecked == 1 ? "card" : "cards") with the TSP: "
                    + "\(response.cardsChanged) changed; \(response.digitizationsResumed) unanswered "
                    + "\(response.digitizationsResumed == 1 ? "digitization" : "digitizations") resumed.\n"
                    + unansweredLine(response.digitizationsUnanswered) + "(trace \(traceID))"
            })
    }

    /// What `sync` says of the cards still waiting for their Digitize's answer; nothing when none waits.
    static func unansweredLine(_ count: UInt32) -> String {
        guard count > 0 else { return "" }
        return "\(count) \(count == 1 ? "card still waits" : "cards still wait") for the TSP's answer to its "
            + "Digitize (the TSP did not answer, or an accept-terms is under way); run sync again once the TSP "
            + "answers.\n"
    }

    /// Every page of `ListCards`.
    static func allCards(_ client: any RPCCaller, options: () -> CallOptions) async throws
        -> WalletV1.ListWalletCardsResponse
    {
        let control = WalletV1.WalletControl.Client(client)
        return try await PagedListing.all(WalletV1.ListWalletCardsRequest(), from: "the wallet", options: options) {
            try await control.listCards($0, options: $1)
        }
    }

    /// The AddCard request the flags describe: exactly one of --pan, --receipt and --push-session.
    static func addCardRequest(_ flags: PartyFlags, command: String) throws(CLIError) -> WalletV1.AddCardRequest {
        let sources = ["--pan", "--receipt", "--push-session"].filter { flags[$0] != nil }
        guard sources.count == 1 else {
            throw CLIError(
                .usage,
                sources.isEmpty
                    ? "\(command): give the card with --pan and --exp, --receipt and --scheme, or --push-session"
                    : "\(command): \(sources.joined(separator: " and ")) cannot be combined; give one card source")
        }
        var request = WalletV1.AddCardRequest(language: flags["--language"] ?? "")
        let manualOnly = ["--exp", "--cvc", "--name", "--input-method"].filter { flags[$0] != nil }
        if flags["--pan"] != nil {
            guard let expiry = flags["--exp"] else { throw CLIError(.usage, "\(command): --pan needs --exp MM/YY") }
            if flags["--scheme"] != nil { throw CLIError(.usage, "\(command): --scheme goes with --receipt") }
            let method = try flags["--input-method"].map { (name) throws(CLIError) in
                try inputMethod(name, command: command)
            }
            // The card number and CVC as given: `-` for one the command reads once the rest is checked.
            var manual = WalletV1.ManualCard(
                pan: flags["--pan"] ?? "", expiry: expiry, cvc: flags["--cvc"] ?? "",
                cardholderName: flags["--name"] ?? "")
            if let method { manual.inputMethod = method }
            // Checked here as the wallet checks them, so a mistake is said before any secret is asked for.
            let problems = [
                ManualCardForm.expiryProblem(expiry), ManualCardForm.cardholderNameProblem(manual.cardholderName),
                manual.cvc == "-" ? nil : ManualCardForm.securityCodeProblem(manual.cvc),
                ManualCardForm.languageProblem(request.language),
            ]
            if let problem = problems.compactMap({ $0 }).first { throw CLIError(.usage, "\(command): \(problem)") }
            request.source = .manual(manual)
            return request
        }
        if let flag = manualOnly.first { throw CLIError(.usage, "\(command): \(flag) goes with --pan") }
        if let payload = flags["--receipt"] {
            guard let name = flags["--scheme"] else {
                throw CLIError(.usage, "\(command): --receipt needs --scheme (mastercard)")
            }
            request.source = .pushReceipt(.init(scheme: try scheme(name, command: command), payload: payload))
        } else if let session = flags["--push-session"] {
            if flags["--scheme"] != nil { throw CLIError(.usage, "\(command): --scheme goes with --receipt") }
            request.source = .pushSessionID(session)
        }
        return request
    }

    static func scheme(_ name: String, command: String) throws(CLIError) -> CardV1.CardScheme {
        switch name.lowercased() {
        case "mastercard": return .mastercard
        case "visa": return .visa
        default: throw CLIError(.usage, "\(command): --scheme must be mastercard or visa, not '\(name)'")
        }
    }

    static func inputMethod(_ name: String, command: String) throws(CLIError) -> CardV1.InputMethod {
        switch name.lowercased() {
        case "manual": return .manual
        case "camera": return .camera
        case "on-file": return .onFile
        // What the issuer's own app pushed, which the issuer needs no security code for: the TSP refuses it for a
        // card typed in.
        case "bank-app":
            throw CLIError(
                .usage,
                "\(command): --input-method bank-app is for a card the issuer's app pushed: add it with --receipt or "
                    + "--push-session")
        default:
            throw CLIError(.usage, "\(command): --input-method must be manual, camera or on-file")
        }
    }
}
