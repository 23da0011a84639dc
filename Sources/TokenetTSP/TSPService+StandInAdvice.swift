import TokenetCard
import TokenetNode
import TokenetWire

/// A digitization the stand-in rule decided is told to the issuer afterwards (STAND_IN_ADVICE to the issuer node's
/// queue, journaled in the transaction that records the decision), as card networks send stand-in advice: otherwise
/// the issuer never hears of a token made while it could not answer, and its renewals and card-wide token changes
/// leave that token out, which then keeps the card's old number.
extension TSPService {
    /// The advice for a digitization `outcome` decides, when the stand-in decided it; nil otherwise. Nil too when
    /// the card cannot be encrypted to the issuer's key (logged): the decision stands, and the issuer is not told.
    func standInAdvice(
        _ pending: PendingDigitization, request: TspV1.DigitizeRequest, outcome: DigitizationOutcome, log: Logger
    ) -> TspV1.StandInAdviceBody? {
        guard outcome.isStandIn else { return nil }
        do {
            guard let issuer = try store.issuers().first(where: { $0.id == pending.token.issuerID }) else {
                log.warning(
                    "the issuer is no longer registered; it is not told of the stand-in's decision",
                    ["issuer": pending.token.issuerID, "digital_card_id": pending.token.digitalCardID])
                return nil
            }
            var advice = TspV1.StandInAdviceBody()
            advice.decision = outcome.decision
            advice.reason = outcome.reason
            // With the security code, encrypted to the issuer's key (which this node cannot read back): the stand-in
            // cannot check it, and the issuer does when the advice arrives, deleting a token approved with a wrong
            // one. Sent without it, any code got a live token while the issuer was away.
            advice.encryptedCardData = try encrypt(pending.receipt.card, to: issuer)
            advice.maskedPAN = try pending.receipt.card.pan().masked
            advice.tokenLast4 = pending.token.tokenLast4
            advice.inputMethod = pending.receipt.inputMethod
            advice.device = request.device
            advice.risk = request.risk
            advice.walletAccountID = pending.token.walletAccountID
            advice.tokenRequestorID = request.tokenRequestorID
            advice.tokenType = request.tokenType
            advice.paymentAccountReference = pending.token.paymentAccountReference ?? ""
            advice.decidedAtMs = nowMs
            return advice
        } catch {
            log.warning(
                "the stand-in's decision cannot be told to the issuer: its card data cannot be encrypted to its key",
                [
                    "issuer": pending.token.issuerID, "digital_card_id": pending.token.digitalCardID,
                    "error": String(describing: error),
                ])
            return nil
        }
    }

    /// STAND_IN_ADVICE about `digitalCardID` to its issuer's node, when there is an advice.
    static func standInAdvice(_ advice: TspV1.StandInAdviceBody?, digitalCardID: String) -> [Announcement] {
        guard let advice else { return [] }
        return [
            Announcement(
                notification: D1.notification(
                    .standInAdvice, from: .cps, cardID: digitalCardID, body: .standInAdvice(advice)),
                recipients: [.issuerApp])
        ]
    }
}
