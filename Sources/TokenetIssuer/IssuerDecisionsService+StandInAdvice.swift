import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

extension IssuerDecisionsService {
    /// The rule a decision the TSP's stand-in made is recorded under, in the issuer's decisions.
    static let standInRule = "stand-in"

    /// How an advice reached the issuer, for its log lines: as a message (with its id), or given again by the TSP's
    /// listing to the issuer's check of its tokens (`IssuerTokenSync`, with no message id).
    static func via(_ messageID: String) -> String { messageID.isEmpty ? "GetIssuerTokens" : "STAND_IN_ADVICE" }

    /// What an advice records: the decision, and the card it is for. `outdated` when the token was made from the
    /// card's number or expiry before a renewal (the advice came from a digitization that raced the renewal, or from
    /// the old number typed in while the issuer was away): the TSP must then move it onto the card as it is now.
    struct StandInAdvicePlan: Sendable {
        var decision: DecisionRecord
        var card: StoredCard?
        var outdated: Bool
        /// An approval the issuer would not have given: the token is deleted at the TSP, not moved onto the card or
        /// left live.
        var refusal: StandInRefusal?
        var reason: String
        var decisionName: String
    }

    /// Why the issuer deletes a token its stand-in approved: the reason code the deletion carries, and what the
    /// issuer found, for its log.
    struct StandInRefusal: Sendable, Equatable {
        var reasonCode: String
        var why: String
    }

    /// What the issuer makes of a stand-in approval, as it would have decided the digitization itself (with no
    /// side effect: nothing is counted toward the card's lock). Card details that are neither the card's nor its
    /// earlier ones (an expiry it never had, a wrong security code: what the stand-in cannot check), or a number
    /// the issuer has no card for, are a mismatch: moved onto the card, such a token gave whoever held the card
    /// number alone a token of the real card, and left live, a token of no card paid. A card that is not eligible,
    /// or whose rule declines, is declined as the issuer would have. A rule that would have stepped up leaves the
    /// approval standing: the stand-in approves only low risk, and the cardholder cannot be stepped up afterwards.
    static func refusal(
        of card: CardData, stored: StoredCard?, differs: Bool, renewedFrom earlier: StoredCard?, risk: RiskScores
    ) -> StandInRefusal? {
        let mismatch = IssuerCardCareService.detailsMismatchReason
        let declined = IssuerCardCareService.issuerDeclinedReason
        guard let stored else {
            return StandInRefusal(reasonCode: mismatch, why: "the issuer has no card ending \(card.last4)")
        }
        if differs, (try? card.expiry()) != nil, earlier == nil {
            return StandInRefusal(
                reasonCode: mismatch, why: "the expiry date is not one the card ending \(stored.pan.last4) has had")
        }
        if !differs, IssuerEligibility.securityCodeMatches(card, stored) == false {
            return StandInRefusal(reasonCode: mismatch, why: "the security code does not match the issuer's records")
        }
        if let blocked = stored.blockedRefusal {
            return StandInRefusal(reasonCode: declined, why: blocked)
        }
        if let reason = stored.notEligibleReason {
            return StandInRefusal(reasonCode: declined, why: "the card is not eligible: \(reason)")
        }
        if case .declined(let reason) = DigitizationPolicy.decide(stored.rule, risk: risk, contact: stored.contact) {
            return StandInRefusal(reasonCode: declined, why: "the card's rule declines it: \(reason)")
        }
        return nil
    }

    /// Reads a digitization the TSP's stand-in rule decided for one of this issuer's cards while the issuer could
    /// not answer (STAND_IN_ADVICE): the decision to record as if the issuer had decided it, so that the token
    /// counts among its card's tokens and renewals and card-wide changes reach it. The card is found by its number,
    /// or by a number it had before a renewal. Nil when there is nothing to record: an advice recorded before (a
    /// redelivery), or one that cannot be read (no card data, data not encrypted to this issuer's key, an undecided
    /// decision), logged, since it would read no better delivered again; only a storage failure throws, and the
    /// message then comes again.
    func standInAdvicePlan(
        _ advice: TspV1.StandInAdviceBody, digitalCardID: String, messageID: String, log: Logger
    ) throws(IssuerError) -> StandInAdvicePlan? {
        let decision = advice.decision.protoValueName ?? "\(advice.decision.rawValue)"
        let last4 = String(advice.maskedPAN.filter(\.isNumber).suffix(4))
        let outcome: DigitizationOutcome
        switch advice.decision {
        case .approved: outcome = .approved
        case .declined: outcome = .declined(reason: advice.reason)
        default:
            log.warning(
                "stand-in advice with neither an approval nor a decline; not recorded",
                [
                    "message_id": messageID, "via": Self.via(messageID), "digital_card_id": digitalCardID,
                    "decision": decision,
                ])
            return nil
        }
        guard !digitalCardID.isEmpty else {
            log.warning(
                "stand-in advice that names no token; not recorded",
                ["message_id": messageID, "via": Self.via(messageID)])
            return nil
        }
        if try store.hasDecision(digitalCardID: digitalCardID, rule: Self.standInRule) {
            log.debug(
                "stand-in advice recorded before; nothing to do",
                ["message_id": messageID, "via": Self.via(messageID), "digital_card_id": digitalCardID])
            return nil
        }
        let card: CardData
        let pan: PAN
        do {
            card = try decrypt(advice.encryptedCardData)
            pan = try self.pan(of: card)
        } catch {
            log.warning(
                "stand-in advice whose card cannot be read; not recorded",
                [
                    "message_id": messageID, "via": Self.via(messageID), "digital_card_id": digitalCardID,
                    "last4": last4,
                    "error": (error as? RPCError)?.message ?? String(describing: error),
                ])
            return nil
        }
        let current = try store.card(matching: pan)
        var stored = current
        if stored == nil { stored = try store.card(thatHad: pan) }
        // An advice given again by GetIssuerTokens for a token from before the TSP kept expiries has none: its
        // number alone tells.
        let expiry = try? card.expiry()
        let differs = stored.map { $0.pan != pan || (expiry != nil && expiry != $0.expiry) } ?? false
        // Details that differ are the card's earlier ones only when a renewal gave them up (number and expiry).
        let earlier =
            differs && expiry != nil
            ? try store.renewedCard(describedBefore: pan, expiry: expiry, current: current) : nil
        let risk = RiskScores(
            account: Int(advice.risk?.accountScore ?? 0), device: Int(advice.risk?.deviceScore ?? 0),
            recommendation: advice.risk?.recommendation ?? .unspecified)
        let refusal =
            advice.decision == .approved
            ? Self.refusal(of: card, stored: stored, differs: differs, renewedFrom: earlier, risk: risk) : nil
        let outdated = differs && refusal == nil
        return StandInAdvicePlan(
            decision: DecisionRecord(
                cardID: stored?.id, last4: card.last4, digitalCardID: digitalCardID, tokenLast4: advice.tokenLast4,
                walletAccountID: advice.walletAccountID, inputMethod: Int(advice.inputMethod.rawValue),
                deviceID: advice.device?.deviceID ?? "", deviceType: advice.device?.deviceType ?? "",
                risk: risk,
                recommendation: Int(advice.risk?.recommendation.rawValue ?? 0), rule: Self.standInRule,
                outcome: outcome, tokenRequestorID: advice.tokenRequestorID,
                tokenType: Int(advice.tokenType.rawValue),
                // Recorded only in its form: advice is recorded whatever else it holds, or it came back for ever.
                paymentAccountReference: PaymentAccountReference.isWellFormed(advice.paymentAccountReference)
                    ? advice.paymentAccountReference : ""),
            card: stored, outdated: outdated && advice.decision == .approved, refusal: refusal,
            reason: advice.reason, decisionName: decision)
    }

    /// Records what `standInAdvicePlan` read, decided at `decidedAtMs` (now when 0); false when the advice was
    /// recorded meanwhile (the message and the issuer's check with the TSP, `IssuerTokenSync`, read it at once).
    @discardableResult
    func record(_ plan: StandInAdvicePlan, decidedAtMs: UInt64, messageID: String, log: Logger) throws(IssuerError)
        -> Bool
    {
        let id = plan.decision.digitalCardID
        // The issuer answered, but too late for the TSP (a slow link): its own decision is in the log already, and
        // "while the issuer could not" beside it read as a contradiction.
        let answeredLate = try store.hasDecision(digitalCardID: id, otherThan: Self.standInRule)
        guard
            try store.recordOnce(
                plan.decision,
                at: decidedAtMs == 0 ? now() : Date(timeIntervalSince1970: Double(decidedAtMs) / 1000))
        else {
            log.debug(
                "stand-in advice recorded before; nothing to do",
                ["message_id": messageID, "via": Self.via(messageID), "digital_card_id": id])
            return false
        }
        // The TSP made the token, so it knows it, whatever it answered about it before.
        store.noteKnownToTSP([id], why: "STAND_IN_ADVICE", log: log)
        if let card = plan.card {
            log.info(
                answeredLate
                    ? "the TSP's stand-in decided a digitization the issuer answered too late; the stand-in's decision "
                        + "stands, recorded with its card"
                    : "the TSP's stand-in decided a digitization while the issuer could not; recorded with its card",
                [
                    "message_id": messageID, "via": Self.via(messageID), "digital_card_id": id, "card": card.id,
                    // The card as it is: a token made from its previous number was moved onto it first.
                    "last4": card.pan.last4,
                    "decision": plan.decisionName, "reason": plan.reason,
                    "token_requestor_id": Self.shownRequestor(plan.decision.tokenRequestorID),
                    "token_type": Self.shownTokenType(plan.decision.tokenType),
                    "par": plan.decision.paymentAccountReference.isEmpty
                        ? "none" : plan.decision.paymentAccountReference,
                ])
        } else {
            log.warning(
                "the TSP's stand-in decided a digitization of a card the issuer does not know; recorded without one",
                [
                    "message_id": messageID, "via": Self.via(messageID), "digital_card_id": id,
                    "last4": plan.decision.last4,
                    "decision": plan.decisionName, "reason": plan.reason,
                    "token_requestor_id": Self.shownRequestor(plan.decision.tokenRequestorID),
                    "token_type": Self.shownTokenType(plan.decision.tokenType),
                    "par": plan.decision.paymentAccountReference.isEmpty
                        ? "none" : plan.decision.paymentAccountReference,
                ])
        }
        return true
    }
}
