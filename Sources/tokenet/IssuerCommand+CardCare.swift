import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet issuer suspend-tokens|resume-tokens|delete-tokens|renew-card|send-message ADDR …`: the issuer's
/// operators act on cards already in wallets, through issuer-node's IssuerCardCare service.
extension IssuerCommand {
    static let cardCareActions = [
        tokens("suspend"), tokens("resume"), tokens("delete"), renewCard, sendMessage, cardStatus(blocking: true),
        cardStatus(blocking: false),
    ]

    static let cardCareHelp = """

        Cards in wallets:
               tokenet issuer suspend-tokens|resume-tokens|delete-tokens ADDR DIGITAL_CARD_ID...|--card CARD_ID
                   --reason CODE [--recheck-unknown]
               tokenet issuer renew-card ADDR CARD_ID [--pan PAN] [--exp MM/YY] | --abandon | --force-complete
                   [OPTIONS]
               tokenet issuer send-message ADDR DIGITAL_CARD_ID --title TEXT --body TEXT [--action ACTION]
               tokenet issuer block-card ADDR CARD_ID --reason CODE [--tokens suspend|delete|keep]
               tokenet issuer unblock-card ADDR CARD_ID [--reason CODE] [--tokens resume|keep]

        suspend-tokens, resume-tokens and delete-tokens change the issuer's tokens at the TSP, those named or
        every token of a card (--card; e.g. --reason LOST_CARD), with a result per token; the TSP takes 10 a
        call, so more go in several calls. --card skips the tokens known deleted or unknown to the TSP and says
        how many; a token named that the issuer knows is either is refused by name without asking the TSP (but
        deleting one known deleted is answered DEACTIVATED: deleting is idempotent).
        A token stops counting as unknown once the TSP names it (a message to the issuer app, a question, an
        answer); --recheck-unknown sends the tokens recorded unknown to the TSP anyway, and each it answers
        about is no longer recorded so (deleted tokens are still skipped).
        renew-card gives a card a new number and/or expiry; its tokens, all of them however many, keep working,
        the wallets that hold them show the new number's last four digits, and the issuer app resynchronises its
        card ids. Deleted tokens are skipped, and a token the TSP refuses for good (unknown to it, another
        issuer's) is listed but does not hold the renewal back; one it does not know is skipped from then on. A
        renewal whose answer from the TSP was lost stays pending (the card keeps its number; cards shows it): run
        the same renew-card again to complete it, or --abandon it to give the reserved number back. Either first
        asks the TSP whether it applied the renewal: if it did, the renewal completes (also for --abandon); if the
        TSP cannot be asked, --abandon leaves the renewal pending. --pan - reads the new number from standard
        input (asked for at a terminal, without echo), so that ps does not show it to every user.
        --force-complete completes a pending renewal that repeating cannot, listing the tokens that do not hold
        the new card; it too asks the TSP first, and is refused while the TSP cannot be asked. A token the TSP
        will not answer about (another issuer's) holds neither back, and both name it.
        send-message sends the cardholder a message about a card, shown by the issuer app and kept by the wallet.
        block-card blocks a card reported lost or stolen (e.g. --reason STOLEN): it is declined at eligibility and
        digitization, a stand-in approval of it is deleted, no code is sent for its tokens waiting for ID&V, none
        is activated, and it is not pushed. Its tokens are suspended (--tokens suspend, the default; those
        waiting for ID&V are deleted, as they cannot be suspended), deleted, or kept as they are. unblock-card
        opens it again, and resumes its tokens (--tokens resume, lifting the issuer's own suspensions) or keeps
        them as they are (the default). issuer cards shows a blocked card's reason in its RULE column. A change
        of its tokens that the TSP did not settle (it did not answer, or the node stopped first) stays pending
        with the card (cards shows it) and is made again 1, 5 and 30 s later and then every minute, each time
        the issuer's stream to the TSP opens, and on issuer sync; blocking or opening the card again replaces it.
        """

    static func tokens(_ word: String) -> PartyAction {
        PartyAction(
            name: "\(word)-tokens", valued: ["--reason", "--card"], switches: ["--json", "--recheck-unknown"]
        ) { flags, command throws(CLIError) in
            let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...Int.max)
            let card = flags["--card"]
            guard options.operands.isEmpty == (card != nil) else {
                // Said for what was given: with neither, "not both" read as if both had been.
                let which = card == nil ? "one of them" : "one of them, not both"
                throw CLIError(
                    .usage,
                    "\(command): give DIGITAL_CARD_IDs (see tokenet tsp tokens) or --card CARD_ID for every token of "
                        + "a card (see tokenet issuer cards): \(which)")
            }
            let request = IssuerV1.IssuerChangeTokenStatesRequest(
                digitalCardIds: options.operands, action: LifecycleArguments.action(word),
                reasonCode: try LifecycleArguments.reason(flags, command: command), cardID: card ?? "",
                recheckUnknown: flags.switches.contains("--recheck-unknown"))
            return try PartySession.run(
                options, json: flags.json,
                call: { session, callOptions in
                    // The issuer may have sent the change on before this command's call was lost: the bare
                    // "connection lost" read as a change that did not happen, and a retry as a risk.
                    try await hintingLostAnswer(
                        "the change may have reached the TSP and been made there: send the same command again, "
                            + "which answers each token's state, or see the states with tokenet tsp tokens"
                    ) {
                        try await IssuerV1.IssuerCardCare.Client(session.client).changeTokenStates(
                            request, options: callOptions)
                    }
                },
                text: { response, traceID in
                    // A card with no token to change printed the table's header alone, and nothing said so.
                    (response.results.isEmpty
                        ? "No token changed: card \(shownName(card ?? "")) has no token to \(word) at the TSP."
                        : PartyText.tokenResults(response.results))
                        + skippedText(deleted: response.deletedTokensSkipped, unknown: response.unknownTokensSkipped)
                        + "\n(trace \(traceID))"
                },
                exitStatus: { response in refusalStatus(response.results) })
        }
    }

    static let renewCard = PartyAction(
        name: "renew-card", valued: ["--pan", "--exp"], switches: ["--json", "--abandon", "--force-complete"]
    ) { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["CARD_ID"])
        guard let cardID = options.operands.first else {
            throw CLIError(.usage, "\(command): missing CARD_ID (see tokenet issuer cards)")
        }
        let abandon = flags.switches.contains("--abandon")
        let force = flags.switches.contains("--force-complete")
        if abandon && force {
            throw CLIError(.usage, "\(command): give --abandon or --force-complete, not both")
        }
        if abandon || force {
            guard flags["--pan"] == nil, flags["--exp"] == nil else {
                throw CLIError(
                    .usage, "\(command): \(abandon ? "--abandon" : "--force-complete") takes no --pan or --exp")
            }
        } else {
            guard flags["--pan"] != nil || flags["--exp"] != nil else {
                throw CLIError(.usage, "\(command): give --pan, --exp or both (or --abandon, or --force-complete)")
            }
        }
        // Checked here as add-card checks it, before the issuer is asked (which refused it, status 67, as its own).
        if let expiry = flags["--exp"], let problem = ManualCardForm.expiryProblem(expiry) {
            throw CLIError(.usage, "\(command): \(problem)")
        }
        let request = IssuerV1.IssuerRenewCardRequest(
            cardID: cardID, pan: try flags.secret("--pan", sentWith: options) ?? "", expiry: flags["--exp"] ?? "",
            abandon: abandon,
            forceComplete: force)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                do {
                    return try await IssuerV1.IssuerCardCare.Client(session.client).renewCard(
                        request, options: callOptions)
                } catch let error as RPCError
                    where !abandon && !force && Self.answerMayBeLost(error) && !error.message.contains("stays pending")
                {
                    // (The issuer's own answer that the renewal stays pending, given before this deadline, says it.)
                    // The issuer may have started it: the bare DEADLINE_EXCEEDED left the person guessing.
                    throw RPCError(
                        error.code,
                        "\(error.message); the renewal may have reached the issuer and be pending: run the same "
                            + "renew-card again to complete it, or tokenet issuer renew-card \(options.address) "
                            + "\(cardID) --abandon to "
                            + (request.pan.isEmpty ? "keep the card's expiry" : "give the new number back")
                            + " (tokenet issuer cards "
                            + "\(options.address) shows a pending renewal)",
                        cause: error)
                }
            },
            text: { response, traceID in
                if response.abandoned {
                    return "\(response.cardID): renewal abandoned; the card keeps \(response.maskedPAN), expires "
                        + "\(response.expiry)"
                        + (response.notRenewedDigitalCardIds.isEmpty
                            ? ""
                            : "\ntokens the TSP would not answer about (left aside): "
                                + response.notRenewedDigitalCardIds.joined(separator: ", "))
                        + "\n(trace \(traceID))"
                }
                return (abandon ? "The TSP had applied the renewal, so it was completed, not abandoned.\n" : "")
                    + "\(response.cardID) renewed: \(response.maskedPAN), expires \(response.expiry); tokens kept: "
                    + (response.renewedDigitalCardIds.isEmpty
                        ? "none" : response.renewedDigitalCardIds.joined(separator: ", "))
                    + (response.notRenewedDigitalCardIds.isEmpty
                        ? ""
                        : "\ntokens not holding the new card: "
                            + response.notRenewedDigitalCardIds.joined(separator: ", "))
                    + skippedText(deleted: response.deletedTokensSkipped, unknown: response.unknownTokensSkipped)
                    + "\n(trace \(traceID))"
            })
    }

    /// `block-card` and `unblock-card`.
    static func cardStatus(blocking: Bool) -> PartyAction {
        PartyAction(
            name: blocking ? "block-card" : "unblock-card", valued: ["--reason", "--tokens"], switches: ["--json"]
        ) { flags, command throws(CLIError) in
            let options = try InspectOptions(
                parsing: flags.rest, command: command, operands: 0...1, named: ["CARD_ID"])
            guard let cardID = options.operands.first else {
                throw CLIError(.usage, "\(command): missing CARD_ID (see tokenet issuer cards)")
            }
            let choices: [String: IssuerV1.CardTokensAction] =
                blocking
                ? ["suspend": .suspend, "delete": .delete, "keep": .keep] : ["resume": .resume, "keep": .keep]
            var tokens = IssuerV1.CardTokensAction.unspecified
            if let given = flags["--tokens"] {
                guard let chosen = choices[given.lowercased()] else {
                    throw CLIError(
                        .usage,
                        "\(command): --tokens takes \(choices.keys.sorted().joined(separator: ", ")), not "
                            + "\(shownName(given))")
                }
                tokens = chosen
            }
            let reason =
                blocking || flags["--reason"] != nil ? try LifecycleArguments.reason(flags, command: command) : ""
            let request = IssuerV1.IssuerSetCardStatusRequest(
                cardID: cardID, blocked: blocking, reasonCode: reason, tokens: tokens)
            let change = blocking && tokens == .unspecified ? .suspend : tokens
            return try PartySession.run(
                options, json: flags.json,
                call: { session, callOptions in
                    try await IssuerV1.IssuerCardCare.Client(session.client).setCardStatus(
                        request, options: callOptions)
                },
                text: { response, traceID in
                    let status =
                        response.blocked ? "blocked (\(response.blockedReason))" : "open"
                    return "\(response.cardID) is \(status)\(response.changed ? "" : " (it already was)")"
                        + (response.results.isEmpty ? "" : "\n" + PartyText.tokenResults(response.results))
                        + skippedText(deleted: response.deletedTokensSkipped, unknown: response.unknownTokensSkipped)
                        + (response.tokensPending
                            ? "\nThe change of some tokens is pending: the TSP did not settle it. The issuer node makes it "
                                + "again on its own (1, 5 and 30 s later, then every minute, and when its stream to the "
                                + "TSP opens), or now with tokenet issuer sync." : "")
                        + "\n(trace \(traceID))"
                },
                exitStatus: { response in
                    refusalStatus(
                        response.results.filter {
                            !inTargetState($0, change)
                        })
                })
        }
    }

    /// Whether `result` is a refusal of a token already in the state the card's `change` leads to (SUSPENDED by the
    /// issuer already, say): where the operator wants it. A block run again after the node made its pending change
    /// in the background exited 73 for it.
    static func inTargetState(_ result: TspV1.TokenStateResult, _ change: IssuerV1.CardTokensAction) -> Bool {
        guard result.statusCode != 0 else { return false }
        switch change {
        case .suspend: return result.tokenState == .suspended
        case .delete: return result.tokenState == .deactivated
        case .resume: return result.tokenState == .active
        default: return false
        }
    }

    /// The lines saying how many of a card's tokens were left out as deleted, or as unknown to the TSP.
    static func skippedText(deleted: Int32, unknown: Int32) -> String {
        (deleted > 0 ? "\n\(deleted) deleted token(s) skipped" : "")
            + (unknown > 0 ? "\n\(unknown) token(s) unknown to the TSP skipped" : "")
    }

    static let sendMessage = PartyAction(name: "send-message", valued: ["--title", "--body", "--action"]) {
        flags, command throws(CLIError) in
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...1, named: ["DIGITAL_CARD_ID"])
        guard let id = options.operands.first else {
            throw CLIError(.usage, "\(command): missing DIGITAL_CARD_ID (see tokenet tsp tokens)")
        }
        guard let title = flags["--title"], let body = flags["--body"] else {
            throw CLIError(.usage, "\(command): --title and --body are required")
        }
        let request = IssuerV1.IssuerSendMessageRequest(
            digitalCardID: id, title: title, body: body, action: flags["--action"] ?? "")
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerCardCare.Client(session.client).sendMessage(request, options: callOptions)
            },
            text: { response, traceID in "message \(response.messageID) queued\n(trace \(traceID))" })
    }
}

extension IssuerCommand {
    /// The exit status of a batch of token changes: 0 when every token was changed, else 64 + the code of the first
    /// refused (the table shows each). A batch whose every token was refused exited 0, and a script could not tell
    /// that nothing had changed.
    static func refusalStatus(_ results: [TspV1.TokenStateResult]) -> Int32 {
        guard let refused = results.first(where: { $0.statusCode != 0 }) else { return 0 }
        let code = StatusCode(rawValue: refused.statusCode)
        guard case .unrecognized = code else { return 64 + code.rawValue }
        return 64 + StatusCode.unknown.rawValue
    }
}

extension PartyText {
    static func tokenResults(_ results: [TspV1.TokenStateResult]) -> String {
        table(
            ["DIGITAL CARD", "STATE", "RESULT"],
            results.map {
                let code = StatusCode(rawValue: $0.statusCode)
                // The ids are as the operator typed them, and a result's message echoes its id: a card number
                // given for one was printed in clear, twice.
                return [
                    maskPAN($0.digitalCardID), state($0.tokenState),
                    $0.statusCode == 0 ? "OK" : "\(code.protoValueName ?? "\($0.statusCode)"): \(maskPAN($0.message))",
                ]
            })
    }
}
