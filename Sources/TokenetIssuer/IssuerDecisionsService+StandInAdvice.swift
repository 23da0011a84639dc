import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

extension IssuerDecisionsService {
    /// The rule a decision the TSP's stand-in made is recorded under, in the issuer's decisions.
    static let standInRule = "stand-in"

    /// Records a digitization the TSP's stand-in rule decided for one of this issuer's cards while the issuer could
    /// not answer (STAND_IN_ADVICE), as if the issuer had decided it: the token then counts among its card's tokens,
    /// so renewals and card-wide token changes reach it. An advice recorded before (a redelivery) changes nothing.
    /// One that cannot be read (no card data, data not encrypted to this issuer's key, an undecided decision) is
    /// logged and dropped, since it would read no better delivered again; only a storage failure throws, and the
    /// message then comes again.
    func recordStandInAdvice(
        _ advice: TspV1.StandInAdviceBody, digitalCardID: String, messageID: String, log: Logger
    ) throws(IssuerError) {
        let decision = advice.decision.protoValueName ?? "\(advice.decision.rawValue)"
        let last4 = String(advice.maskedPAN.filter(\.isNumber).suffix(4))
        let outcome: DigitizationOutcome
        switch advice.decision {
        case .approved: outcome = .approved
        case .declined: outcome = .declined(reason: advice.reason)
        default:
            log.warning(
                "stand-in advice with neither an approval nor a decline; not recorded",
                ["message_id": messageID, "digital_card_id": digitalCardID, "decision": decision])
            return
        }
        guard !digitalCardID.isEmpty else {
            log.warning("stand-in advice that names no token; not recorded", ["message_id": messageID])
            return
        }
        if try store.hasDecision(digitalCardID: digitalCardID, rule: Self.standInRule) {
            log.debug(
                "stand-in advice recorded before; nothing to do",
                ["message_id": messageID, "digital_card_id": digitalCardID])
            return
        }
        let card: CardData
        let stored: StoredCard?
        do {
            card = try decrypt(advice.encryptedCardData)
            stored = try store.card(matching: try pan(of: card))
        } catch let error as IssuerError {
            throw error
        } catch {
            log.warning(
                "stand-in advice whose card cannot be read; not recorded",
                [
                    "message_id": messageID, "digital_card_id": digitalCardID, "last4": last4,
                    "error": (error as? RPCError)?.message ?? String(describing: error),
                ])
            return
        }
        try store.record(
            DecisionRecord(
                cardID: stored?.id, last4: card.last4, digitalCardID: digitalCardID, tokenLast4: advice.tokenLast4,
                walletAccountID: advice.walletAccountID, inputMethod: Int(advice.inputMethod.rawValue),
                deviceID: advice.device?.deviceID ?? "", deviceType: advice.device?.deviceType ?? "",
                risk: RiskScores(
                    account: Int(advice.risk?.accountScore ?? 0), device: Int(advice.risk?.deviceScore ?? 0)),
                recommendation: Int(advice.risk?.recommendation.rawValue ?? 0), rule: Self.standInRule,
                outcome: outcome),
            at: advice.decidedAtMs == 0 ? now() : Date(timeIntervalSince1970: Double(advice.decidedAtMs) / 1000))
        // The TSP made the token, so it knows it, whatever it answered about it before.
        store.noteKnownToTSP([digitalCardID], why: "STAND_IN_ADVICE", log: log)
        if let stored {
            log.info(
                "the TSP's stand-in decided a digitization while the issuer could not; recorded with its card",
                [
                    "message_id": messageID, "digital_card_id": digitalCardID, "card": stored.id, "last4": card.last4,
                    "decision": decision, "reason": advice.reason,
                ])
        } else {
            log.warning(
                "the TSP's stand-in decided a digitization of a card the issuer does not know; recorded without one",
                [
                    "message_id": messageID, "digital_card_id": digitalCardID, "last4": card.last4,
                    "decision": decision, "reason": advice.reason,
                ])
        }
    }
}
