import Foundation
import TokenetNode
import TokenetWire

/// How the party commands and the demo show responses to a person: short sentences and aligned tables.
enum PartyText {
    // MARK: Vocabulary

    static func scheme(_ scheme: CardV1.CardScheme) -> String {
        switch scheme {
        case .visa: "Visa"
        case .mastercard: "Mastercard"
        default: "unknown scheme"
        }
    }

    /// "Visa card ending 0009", or "card ending 0078" when the answer named no scheme.
    static func card(_ cardScheme: CardV1.CardScheme, last4: String) -> String {
        let ending = "card ending \(last4.isEmpty ? "?" : last4)"
        return cardScheme == .visa || cardScheme == .mastercard ? "\(scheme(cardScheme)) \(ending)" : ending
    }

    static func state(_ state: CardV1.TokenState) -> String {
        state == .unspecified ? "-" : short(state.protoValueName, prefix: "TOKEN_STATE_")
    }

    static func decision(_ decision: CardV1.ProvisioningDecision) -> String {
        short(decision.protoValueName, prefix: "PROVISIONING_DECISION_")
    }

    static func short(_ name: String?, prefix: String) -> String {
        guard let name else { return "?" }
        return name.hasPrefix(prefix) ? String(name.dropFirst(prefix.count)) : name
    }

    /// UTC, to the second.
    static func time(ms: UInt64) -> String {
        guard ms > 0 else { return "-" }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// Columns padded to their widest cell; "-" for empty cells. A cell is one line: its line breaks, tabs and
    /// other control or invisible characters are escaped (`escapingControls`), since a merchant name or a message
    /// title holding a line break printed a row as two and shifted every column after it.
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        // A column before the last is cut at `widestCell`: every row, the header too, is padded to its widest cell,
        // and a 100,000-character id someone typed made a table of 300 KB. The last, a message, is cut as an ERROR
        // line is. `--json` has every value whole.
        let cut = { (column: Int, cell: String) -> String in
            let limit = column == header.count - 1 ? Self.longestMessage : Self.widestCell
            return cell.count <= limit ? cell : String(cell.prefix(limit - 1)) + "…"
        }
        let cells =
            [header]
            + rows.map { row in row.enumerated().map { cut($0, $1.isEmpty ? "-" : escapingControls($1)) } }
        let widths = header.indices.map { column in cells.map { $0[column].count }.max() ?? 0 }
        return cells.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// The most characters a table shows of a cell before its last column, and of one in its last.
    static let widestCell = 100
    static let longestMessage = 1_024

    // MARK: Wallet

    /// The card as the wallet at `address` added it, and the command that accepts its T&C there.
    static func addCard(_ response: WalletV1.AddCardResponse, address: String = "ADDR") -> String {
        let card = card(response.scheme, last4: response.panLast4)
        guard response.eligible else { return "Not eligible: \(card): \(response.reason)" }
        var lines = ["\(response.cardRef): \(card) is eligible."]
        if !response.walletAccountID.isEmpty { lines.append("Wallet account: \(response.walletAccountID).") }
        // The eligibility runs out: accepted later, the card is added again (and a pushed one pushed again).
        let by = response.receiptExpiresAtMs > 0 ? " by \(time(ms: response.receiptExpiresAtMs))" : ""
        if let terms = response.terms {
            lines.append("Terms and conditions \(terms.id) (version \(terms.version), \(terms.language)):")
            lines += terms.text.split(separator: "\n", omittingEmptySubsequences: false).map { "  \($0)" }
            lines.append("Accept them\(by) with: tokenet wallet accept-terms \(address) \(response.cardRef)")
        } else {
            lines.append("No terms and conditions to accept.")
            lines.append("Digitize it\(by) with: tokenet wallet accept-terms \(address) \(response.cardRef)")
        }
        return lines.joined(separator: "\n")
    }

    static func acceptTerms(_ response: WalletV1.AcceptTermsResponse, address: String? = nil) -> String {
        let card = response.card ?? WalletV1.WalletCard()
        let token = "digital card \(card.digitalCardID) (\(scheme(card.scheme)) token ending \(card.tokenLast4))"
        switch response.decision {
        case .approved where card.state == .suspended || card.state == .deactivated:
            // Approved when it was digitized, and changed since: "APPROVED: … is DEACTIVATED" read as a new approval
            // of a dead token.
            let next =
                card.state == .deactivated
                ? "it was deleted; add the card again to digitize it anew"
                : "it was suspended; tokenet wallet resume can lift a suspension the wallet made"
            return "\(card.cardRef): was APPROVED when it was digitized; \(token) is now \(state(card.state)): \(next)."
        case .approved:
            return "\(card.cardRef): APPROVED\(decider(response)): \(token) is \(state(card.state))."
        case .declined:
            // The issuer's words, shown as the nodes log them: a card number in them masked.
            let reason = response.declineReason.isEmpty ? "no reason given" : maskPAN(response.declineReason)
            let by = response.declineReason.contains("stand-in") ? "" : decider(response)
            return "\(card.cardRef): DECLINED\(by): \(reason)."
        case .requireAdditionalAuthentication where card.state != .inactive && card.state != .unspecified:
            // Asked before, and the token has moved on since (activated, or deleted): its ID&V methods are spent.
            let after =
                card.state == .deactivated ? "; it can no longer be activated: delete it, and add the card again" : ""
            return "\(card.cardRef): the issuer asked for additional authentication; \(token) is now "
                + "\(state(card.state))\(after)."
        case .requireAdditionalAuthentication:
            var lines = [
                "\(card.cardRef): the issuer asks for additional authentication; \(token) is \(state(card.state))."
            ]
            lines += response.idvMethods.map { method in
                let type = short(method.type.protoValueName, prefix: "IDV_METHOD_TYPE_")
                return "  ID&V \(method.id): \(type) \(method.maskedValue)"
            }
            // The next command, as add-card names accept-terms.
            if let address, !response.idvMethods.isEmpty {
                lines.append("Choose one with: tokenet wallet select-method \(address) \(card.cardRef) METHOD_ID")
            }
            return lines.joined(separator: "\n")
        default:
            return "\(card.cardRef): \(decision(response.decision)): \(token) is \(state(card.state))."
        }
    }

    /// Names a decision the issuer did not make itself: a stand-in approval read as a plain "APPROVED" looked like
    /// the issuer's, though the issuer never saw the card.
    static func decider(_ response: WalletV1.AcceptTermsResponse) -> String {
        response.decidedBy == "stand-in"
            ? " by the TSP's stand-in rule (the issuer did not answer in time; the TSP tells it later)" : ""
    }

    static func walletCards(_ response: WalletV1.ListWalletCardsResponse) -> String {
        guard !response.cards.isEmpty else { return "The wallet has no cards." }
        // Why a card was declined, or its token not activated in the issuer app, under the table: a column would
        // take the table past any terminal's width. A card number in the words is masked, as accept-terms does.
        let reasons = response.cards.filter { !$0.reason.isEmpty }.map { "\($0.cardRef): \(maskPAN($0.reason))" }
        return cardsTable(response) + (reasons.isEmpty ? "" : "\n\n" + reasons.joined(separator: "\n"))
    }

    private static func cardsTable(_ response: WalletV1.ListWalletCardsResponse) -> String {
        table(
            ["CARD", "STATUS", "SCHEME", "ISSUER", "PAN", "DIGITAL CARD", "TOKEN", "STATE", "WALLET ACCOUNT"],
            response.cards.map {
                [
                    $0.cardRef, $0.status, scheme($0.scheme), $0.issuerID, $0.panLast4,
                    $0.digitalCardID, $0.tokenLast4, state($0.state),
                    $0.walletAccountID.isEmpty ? "-" : $0.walletAccountID,
                ]
            })
    }

    // MARK: Issuer

    static func issuerCards(_ response: IssuerV1.ListCardsResponse) -> String {
        guard !response.cards.isEmpty else { return "The issuer has no cards." }
        return table(
            ["CARD", "PAN", "SCHEME", "EXPIRY", "CARDHOLDER", "ACCOUNT", "RULE", "TOKENS", "RENEWAL"],
            response.cards.map {
                [
                    $0.cardID, $0.maskedPAN, scheme($0.scheme), $0.expiry, $0.cardholderName, $0.accountID,
                    // A card that is not eligible never reaches its rule: the column says so, or the table showed
                    // it as one that provisions.
                    (!$0.blockedReason.isEmpty
                        ? "blocked (\($0.blockedReason))"
                        : $0.notEligibleReason.isEmpty ? $0.digitizationRule : "not eligible")
                        + ($0.pendingTokenChange.map { "; tokens \(pendingTokenChange($0)) pending" } ?? ""),
                    "\($0.digitalCardIds.count)", $0.pendingRenewal.map(pendingRenewal) ?? "",
                ]
            })
    }

    /// A change of a card's tokens waiting for the TSP, as a word: `suspend`, `delete` or `resume`.
    static func pendingTokenChange(_ pending: IssuerV1.PendingTokenChange) -> String {
        let name = pending.action.protoValueName ?? "\(pending.action.rawValue)"
        return (name.hasPrefix("LIFECYCLE_ACTION_") ? String(name.dropFirst(17)) : name).lowercased()
    }

    /// A renewal waiting for the TSP's answer, as a cell: the reserved number (masked), its expiry and since when.
    static func pendingRenewal(_ pending: IssuerV1.PendingCardRenewal) -> String {
        "pending \(pending.maskedPAN) \(pending.expiry) since \(time(ms: pending.sinceMs))"
    }

    /// `request`: what was asked, so that a receipt bound to an account name alone says who else can redeem it.
    static func pushCard(_ response: IssuerV1.PushCardResponse, for request: IssuerV1.PushCardRequest = .init())
        -> String
    {
        switch response.result {
        case .receipt(let receipt)?:
            // Account names are each wallet node's own: any wallet node may have one of the same name.
            let anyNode =
                !request.walletAccountID.isEmpty && request.walletNodeID.isEmpty
                ? "\nAny wallet node with an account named \(shownName(request.walletAccountID)) can redeem it; "
                    + "--wallet-node ID binds it to one wallet node." : ""
            return """
                Push receipt (\(scheme(receipt.scheme)), expires \(time(ms: receipt.expiresAtMs))): \(receipt.payload)
                Add the card with: tokenet wallet add-card WALLET_ADDR --receipt \(receipt.payload) \
                --scheme \(scheme(receipt.scheme).lowercased())
                """ + anyNode
        case .pushSessionID(let id)?:
            return "Push session: \(id)\nAdd the card with: tokenet wallet add-card WALLET_ADDR --push-session \(id)"
        case nil:
            return "The issuer answered without a receipt or a push session."
        }
    }

    // MARK: TSP

    /// `filters`: what the listing was narrowed to (`--wallet-account`, `--issuer`, `--wallet-node`, `--state`).
    static func tokens(_ response: TspV1.ListTokensResponse, filteredBy filters: TspV1.ListTokensRequest = .init())
        -> String
    {
        guard !response.tokens.isEmpty else {
            // Narrowed, an empty answer says nothing of the TSP's other tokens.
            let narrowing = [
                filters.walletAccountID.isEmpty ? nil : "wallet account \(shownName(filters.walletAccountID))",
                filters.issuerID.isEmpty ? nil : "issuer \(shownName(filters.issuerID))",
                filters.walletNodeID.isEmpty ? nil : "wallet node \(shownName(filters.walletNodeID))",
                filters.state == .unspecified ? nil : "state \(state(filters.state))",
            ].compactMap { $0 }
            return narrowing.isEmpty
                ? "The TSP has no tokens." : "The TSP has no tokens of \(narrowing.joined(separator: ", "))."
        }
        return table(
            [
                "DIGITAL CARD", "SCHEME", "PAN", "TOKEN", "STATE", "ISSUER", "WALLET", "WALLET ACCOUNT", "DEVICE",
                "PAR",
            ],
            response.tokens.map {
                [
                    $0.digitalCardID, scheme($0.scheme), $0.panLast4, $0.tokenLast4,
                    state($0.state) + ($0.awaitingDecision ? " (awaiting the issuer's decision)" : ""), $0.issuerID,
                    $0.walletNodeID.isEmpty ? "-" : $0.walletNodeID, $0.walletAccountID, $0.deviceID,
                    $0.paymentAccountReference.isEmpty ? "-" : $0.paymentAccountReference,
                ]
            })
    }

    static func history(_ response: TspV1.TokenHistoryResponse) -> String {
        var lines: [String] = []
        if let token = response.token {
            lines.append(
                "\(token.digitalCardID): \(scheme(token.scheme)) token ending \(token.tokenLast4) for the card ending "
                    + "\(token.panLast4), \(state(token.state))")
        }
        guard !response.events.isEmpty else { return (lines + ["No events."]).joined(separator: "\n") }
        lines.append(
            table(
                ["AT", "FROM", "TO", "ACTOR", "TRACE", "REASON"],
                response.events.map {
                    [time(ms: $0.atMs), state($0.fromState), state($0.toState), $0.actor, $0.traceID, $0.reason]
                }))
        return lines.joined(separator: "\n")
    }
}
