import Foundation
import TokenetWire

/// Where the wallet's status of a card stands: waiting for the cardholder to accept the T&C, or digitized (with the
/// token in any state, INACTIVE for a step-up), or declined by the issuer.
public enum WalletCardStatus: String, Sendable, CaseIterable {
    case pendingTerms = "PENDING_TERMS"
    case digitized = "DIGITIZED"
    case declined = "DECLINED"
}

/// How the cardholder gave the card to the wallet.
public enum WalletCardSource: String, Sendable {
    case manual
    case pushReceipt = "push-receipt"
    case pushSession = "push-session"
}

/// One card as the wallet keeps it. The card number itself is never kept: only its last four digits.
public struct WalletCardRecord: Sendable, Equatable {
    public var id: Int64
    public var source: WalletCardSource
    public var scheme: CardV1.CardScheme
    public var panLast4: String
    public var status: WalletCardStatus
    public var eligibilityReceipt: String
    public var receiptExpiresAtMs: UInt64
    /// nil when the program needs no T&C.
    public var terms: CardV1.TermsAndConditions?
    /// Set, and committed, before the first Digitize call so a retry sends the same idempotency key.
    public var digitizeRequestID: String?
    public var termsAcceptedAtMs: UInt64?
    /// The TSP's answer once digitization finished.
    public var result: TspV1.DigitizeResponse?
    /// The wallet account that was active when the card was added: its eligibility receipt, its token and the events
    /// about it belong to that account, whichever account is active later. nil for a card stored before the wallet
    /// recorded accounts per card; those were all added under the configured account (`account(configured:)`).
    public var walletAccountID: String? = nil
    /// The card's issuer as the TSP named it at digitization (`DigitizeResponse.issuer_id`, `issuer_node_id`), or
    /// later for a card digitized before the wallet recorded issuers (`GetTokenIssuer`). nil before digitization,
    /// for such a card until the TSP has named its issuer, and from a TSP that names none.
    public var issuerID: String? = nil
    /// The node id of the issuer app that may see the card: the one in the certificate of the node that registered
    /// the issuer at the TSP.
    public var issuerNodeID: String? = nil
    /// Why the issuer app did not activate the token the last time the wallet opened it (the reason its failure
    /// gave), kept until the token's state changes; nil otherwise.
    public var activationFailure: String? = nil

    /// Whether the issuer app of node `nodeID` may see the card (list it, hear its events). A card whose issuer the
    /// wallet does not know is no app's: showing it to every app gave one bank's app another bank's cards.
    public func belongs(toIssuerNode nodeID: String) -> Bool {
        issuerNodeID != nil && issuerNodeID == nodeID
    }

    /// Digitized without an issuer recorded: `cardsAwaitingIssuer` lists it, and the issuer resolver asks the TSP.
    public var awaitsIssuer: Bool {
        issuerID == nil && status == .digitized && !(result?.digitalCardID ?? "").isEmpty
    }

    /// The card's wallet account, `configured` for a card stored before accounts were recorded per card.
    public func account(configured: String) -> String { walletAccountID ?? configured }

    /// The reference the CLI and AcceptTerms use: `card-1`, `card-2`, …
    public var cardRef: String { Self.ref(id) }

    public static func ref(_ id: Int64) -> String { "card-\(id)" }

    /// The id in `card-N`, or nil for anything else.
    public static func id(fromRef ref: String) -> Int64? {
        guard ref.hasPrefix("card-"), let id = Int64(ref.dropFirst(5)), id > 0, ref == Self.ref(id) else { return nil }
        return id
    }

    /// The card as `AcceptTerms` and ID&V show it, with its issuer once digitization named one; a card stored before
    /// accounts were recorded per card shows no account (`walletCard(configured:)` names it).
    public var walletCard: WalletV1.WalletCard {
        WalletV1.WalletCard(
            cardRef: cardRef,
            digitalCardID: result?.digitalCardID ?? "",
            scheme: result.map { $0.scheme == .unspecified ? scheme : $0.scheme } ?? scheme,
            panLast4: panLast4,
            tokenLast4: result?.tokenLast4 ?? "",
            // A declined card has no token: the state the TSP gave its declined request (DEACTIVATED) showed as if
            // a token had been made and then ended.
            state: result.map { $0.digitalCardID.isEmpty ? .unspecified : $0.tokenState } ?? .unspecified,
            status: shownStatus,
            walletAccountID: walletAccountID ?? "",
            issuerID: issuerID ?? "",
            reason: shownReason,
            paymentAccountReference: result?.paymentAccountReference ?? "")
    }

    /// `WalletCard.reason`: the decline's for a declined card, the issuer app's failure for a token still INACTIVE.
    var shownReason: String {
        if status == .declined { return result?.declineReason ?? "" }
        guard let activationFailure, result?.tokenState == .inactive else { return "" }
        return "the issuer app did not activate it: \(activationFailure)"
    }

    /// The status as `ListCards` shows it: DIGITIZING for a card whose T&C were accepted and whose Digitize has no
    /// answer yet, where PENDING_TERMS said the terms still waited while the TSP may have made its token
    /// (accept-terms again gets the answer).
    public var shownStatus: String {
        status == .pendingTerms && result == nil && digitizeRequestID != nil ? "DIGITIZING" : status.rawValue
    }

    /// `shownStatus` at `nowMs`: TERMS_EXPIRED for a card whose T&C still wait but whose eligibility has run out
    /// (PENDING_TERMS read as if accept-terms would still work, which then said the eligibility had expired).
    public func shownStatus(at nowMs: UInt64) -> String {
        let shown = shownStatus
        guard shown == WalletCardStatus.pendingTerms.rawValue, receiptExpiresAtMs != 0, receiptExpiresAtMs <= nowMs
        else { return shown }
        return "TERMS_EXPIRED"
    }

    /// What to do with a card whose eligibility expired before its T&C were accepted. A pushed card cannot be
    /// added again from what pushed it: its receipt or session was spent by the eligibility check that expired.
    var addAgain: String {
        switch source {
        case .pushReceipt: "have the issuer push the card again (a new push receipt), then add it with that"
        case .pushSession: "have the issuer push the card again (a new push session), then add it with that"
        case .manual: "add the card again"
        }
    }

    /// Why a command that needs the card's token refuses it: it has none, or none the wallet has heard of yet. The
    /// status is the one `cards` lists (TERMS_EXPIRED said PENDING_TERMS here, with advice that then failed).
    var noDigitalCard: String {
        let shown = shownStatus(at: UInt64(max(0, Date().timeIntervalSince1970 * 1000)))
        let hint =
            switch shown {
            case "DIGITIZING":
                "; its digitization has no answer yet: accept its T&C again (tokenet wallet accept-terms) to get it"
            case WalletCardStatus.pendingTerms.rawValue:
                "; accept its T&C first (tokenet wallet accept-terms)"
            case "TERMS_EXPIRED":
                "; its eligibility expired before its T&C were accepted: \(addAgain)"
            default: ""
            }
        return "\(cardRef) has no digital card (status \(shown))\(hint)"
    }

    /// The card as `ListCards` shows it, with its account also when it was stored before accounts were recorded.
    public func walletCard(configured: String) -> WalletV1.WalletCard {
        var card = walletCard
        card.walletAccountID = account(configured: configured)
        return card
    }
}

/// What AcceptTerms does with a card, decided from the stored card alone (no I/O), so every path is testable.
public enum AcceptTermsPlan: Equatable, Sendable {
    /// Digitization already finished: answer with the stored result, and call nothing.
    case answer(TspV1.DigitizeResponse)
    /// Call Digitize with this idempotency key and acceptance time. `fresh` means they must be stored before the call.
    case digitize(requestID: String, termsAcceptedAtMs: UInt64, fresh: Bool)
    /// The eligibility receipt ran out before the cardholder accepted: the card has to be added again.
    case receiptExpired

    public static func plan(for card: WalletCardRecord, nowMs: UInt64, newRequestID: () -> String) -> AcceptTermsPlan {
        if let result = card.result { return .answer(result) }
        // An attempt already started: the TSP decides on the stored key, even if the receipt expired since.
        if let requestID = card.digitizeRequestID {
            return .digitize(requestID: requestID, termsAcceptedAtMs: card.termsAcceptedAtMs ?? nowMs, fresh: false)
        }
        if card.receiptExpiresAtMs != 0 && card.receiptExpiresAtMs <= nowMs { return .receiptExpired }
        return .digitize(requestID: newRequestID(), termsAcceptedAtMs: nowMs, fresh: true)
    }
}

/// What a delete does with a card, decided from the stored card alone (no I/O), so every path is testable.
public enum CardDeletePlan: Equatable, Sendable {
    /// The card has a token: the TSP deletes it and tells every party.
    case deleteToken(digitalCardID: String)
    /// The card never got a token (its T&C not accepted, or declined): the TSP holds nothing of it, so the wallet
    /// removes the card itself. Without this a card the cardholder declined the terms of, or that the issuer
    /// declined, stayed in the wallet for good, since the TSP has no token to delete.
    case removeCard
    /// Digitize was sent and not answered: the TSP may have made a token the wallet does not know of yet, which
    /// removing the card would leave behind.
    case awaitDigitization

    /// The card's token has ended (DEACTIVATED: deleted, or replaced by a newer digitization): the TSP refuses to
    /// delete it again, so the wallet removes the card itself. Without this such a card stayed listed for good.
    case removeEndedCard

    public static func plan(for card: WalletCardRecord) -> CardDeletePlan {
        if let result = card.result, !result.digitalCardID.isEmpty {
            return result.tokenState == .deactivated
                ? .removeEndedCard : .deleteToken(digitalCardID: result.digitalCardID)
        }
        if card.result == nil && card.digitizeRequestID != nil { return .awaitDigitization }
        return .removeCard
    }
}

extension TspV1.DigitizeResponse {
    /// The wallet's status once the TSP answered: declined without a digital card, digitized otherwise.
    var walletStatus: WalletCardStatus {
        decision == .declined || digitalCardID.isEmpty ? .declined : .digitized
    }
}
