import Foundation
import TokenetNode
import TokenetWire

/// The wallet's processing of the messages the TSP's broker delivers. Every message is kept in the inbox once
/// processed (once per message id: a redelivered message is not processed again). Messages from CPS, MG and TNS on the D1 topic act:
/// CARD_STATE updates the token and tells the issuer app's listeners, TRANSACTION_NOTIFICATION is added to the
/// transaction list, REPLENISHMENT fetches a new batch of payment keys, CARD_RENEWAL shows the renewed card's last
/// four digits; MESSAGING is shown from the inbox.
public final class WalletNotificationHandler: NotificationHandler {
    static let senders: Set<String> = ["CPS", "MG", "TNS"]

    let store: WalletStore
    let updates: WalletTokenUpdates
    let logger: Logger
    let clock: @Sendable () -> UInt64
    /// Hears that the stream opened (`WalletTokenStateSync`); nil where no node runs in the background.
    let opened: StreamOpenedSignal?

    init(
        store: WalletStore, updates: WalletTokenUpdates, logger: Logger, clock: @escaping @Sendable () -> UInt64,
        opened: StreamOpenedSignal? = nil
    ) {
        self.store = store
        self.updates = updates
        self.logger = logger
        self.clock = clock
        self.opened = opened
    }

    /// The stream opened: the token states are checked with the TSP, for a change whose message the broker dropped.
    public func streamOpened() {
        opened?.streamOpened()
    }

    public func handle(_ notification: TspV1.Notification) async throws {
        // Ids, sender, type and card id only: a body may carry a cardholder's message, never logged.
        logger.info(
            "notification received",
            [
                "message_id": notification.messageID, "sequence": "\(notification.sequence)",
                "sender": notification.sender, "topic": notification.topic, "type": notification.messageType,
                "card_id": notification.cardID, "attempt": "\(notification.deliveryAttempt)",
            ])
        // Kept once processed, not before: a node that stops or crashes while processing (a key batch asked of a
        // TSP slow to answer) processes the redelivery instead of taking it for a message seen before. A crash
        // between the two processes it twice, which every action here allows (a state set again, a transaction
        // replaced, one batch of keys more).
        guard try store.hasKept(messageID: notification.messageID) == false else {
            logger.debug("notification seen before", ["message_id": notification.messageID])
            return
        }
        do throws(WalletError) {
            try await process(notification)
        } catch {
            // A peer the action needs (the TSP, for a new key batch) is unreachable: the message is not kept, and
            // the subscriber delivers it again.
            guard error.code != .unavailable else { throw error }
            if error.code == .failedPrecondition, case .replenishment? = notification.body {
                // A key batch for a token deleted or suspended since the push was sent: the TSP issues keys to
                // ACTIVE tokens only, and nothing is wrong. Logged at error, it was the one error line of a normal
                // run (a push racing a delete).
                logger.info(
                    "payment keys not fetched: the TSP refused them, as it does for a token no longer ACTIVE; its "
                        + "reason follows",
                    [
                        "message_id": notification.messageID, "digital_card_id": notification.cardID,
                        "error": String(describing: error),
                    ])
            } else {
                logger.error(
                    "notification could not be processed",
                    [
                        "message_id": notification.messageID, "type": notification.messageType,
                        "error": String(describing: error),
                    ])
            }
        }
        // A store that cannot keep it throws too: the message is delivered again rather than acknowledged unseen.
        _ = try store.keep(notification, nowMs: clock())
    }

    private func process(_ notification: TspV1.Notification) async throws(WalletError) {
        guard Self.senders.contains(notification.sender), notification.topic == "D1_NOTIFICATION" else { return }
        let card = try store.card(digitalCardID: notification.cardID)
        var fields: KeyValuePairs<String, String> {
            [
                "message_id": notification.messageID, "type": notification.messageType,
                "digital_card_id": notification.cardID,
            ]
        }
        switch notification.body {
        case .cardState(let body)?:
            // Before it is kept as an early state too, which the card took when its answer came (state "?").
            try WalletTokenUpdates.requireKnown(
                body.tokenState, of: "token \(notification.cardID)",
                keeps: card?.result?.tokenState.protoValueName ?? "the state its digitization gives it")
            if card == nil, let unanswered = try store.card(digitizeRequestID: body.digitizeRequestID) {
                return try endUnanswered(unanswered, body, notification)
            }
            var recorded = card
            if recorded == nil {
                recorded = try store.keepEarlyState(
                    digitalCardID: notification.cardID, state: body.tokenState, version: body.stateVersion,
                    nowMs: clock())
            }
            guard let card = recorded else {
                // Most likely the state of a token whose Digitize answer is still on its way (this message overtook
                // it): kept, and applied when the answer is recorded (`WalletStore+EarlyStates`). A card recorded
                // since the look above is returned instead, and updated here.
                return logger.info("card state for a card not recorded yet; kept until its digitization is", fields)
            }
            let stored = try updates.apply(body.tokenState, version: body.stateVersion, to: card)
            guard stored.result?.tokenState == body.tokenState else {
                // A state older than the one recorded (a message delivered again after a later change), or any
                // state of a deleted token, which stays deleted: kept out.
                return logger.info(
                    stored.result?.tokenState == .deactivated
                        ? "token state not changed: the token is DEACTIVATED, which no message changes"
                        : "token state not changed: the message is older than the state recorded",
                    [
                        "message_id": notification.messageID, "digital_card_id": notification.cardID,
                        "held": stored.result?.tokenState.protoValueName ?? "?",
                        "held_version": "\(stored.result?.stateVersion ?? 0)",
                        "message_state": body.tokenState.protoValueName ?? "?",
                        "message_version": "\(body.stateVersion)",
                    ])
            }
            // What changed and who changed it: the type and the id alone sent a person to the TSP's history.
            logger.info(
                "token state updated from the TSP",
                [
                    "message_id": notification.messageID, "type": notification.messageType,
                    "digital_card_id": notification.cardID, "state": body.tokenState.protoValueName ?? "?",
                    "reason": body.reasonCode, "initiator": body.initiator,
                ])
        case .transaction(let body)?:
            try store.record(
                WalletV1.WalletTransaction(
                    transactionID: body.transactionID, digitalCardID: notification.cardID,
                    amountMinor: body.amountMinor, currency: body.currency, merchant: body.merchant,
                    approved: body.approved, transactionAtMs: body.transactionAtMs,
                    lastCallTimestampMs: notification.lastCallTimestampMs))
            logger.info("transaction recorded", fields)
        case .replenishment?:
            guard let card else { return logger.warning("replenishment for an unknown card", fields) }
            try await updates.replenish(card, reason: "MG push")
        case .cardRenewal(let body)?:
            guard let card else { return logger.warning("card renewal for an unknown card", fields) }
            try renew(card, body, notification)
        case .messaging?:
            logger.info("message received", fields)
        default:
            logger.info("notification kept", fields)
        }
    }

    /// The issuer renewed the card behind its token: the token goes on, and the wallet shows the new card's last four
    /// digits. Only four digits are taken, since the wallet shows them as the card's.
    private func renew(
        _ card: WalletCardRecord, _ body: TspV1.CardRenewalBody, _ notification: TspV1.Notification
    ) throws(WalletError) {
        let fields: KeyValuePairs<String, String> = [
            "message_id": notification.messageID, "card_ref": card.cardRef, "digital_card_id": notification.cardID,
            "previous_pan_last4": card.panLast4, "pan_last4": body.panLast4, "expiry": body.expiry,
        ]
        guard body.panLast4.utf8.count == 4, body.panLast4.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return logger.warning(
                "card renewal without the last four digits of a card number; card left as it is", fields)
        }
        if try store.renewCard(id: card.id, panLast4: body.panLast4, nowMs: clock()) {
            logger.info("card renewed by its issuer", fields)
        } else {
            logger.info("card renewal changes nothing: already shown, or the card is deleted", fields)
        }
    }

    /// A digitization the TSP ended without ever answering its Digitize (it stopped while asking the issuer, and
    /// nobody retried within the step-up window; DIGITIZATION_EXPIRED). The wallet knows the card by its request id
    /// only, and records it declined as the TSP now answers that request, so the card no longer waits and a retry
    /// of AcceptTerms answers from the store. A card whose answer is already stored keeps it.
    private func endUnanswered(
        _ card: WalletCardRecord, _ body: TspV1.CardStateBody, _ notification: TspV1.Notification
    ) throws(WalletError) {
        let fields: KeyValuePairs<String, String> = [
            "message_id": notification.messageID, "card_ref": card.cardRef, "digital_card_id": notification.cardID,
            "reason": body.reasonCode, "token_state": body.tokenState.protoValueName ?? "?",
        ]
        guard card.result == nil else {
            return logger.info("card state for a digitization whose answer the wallet already has", fields)
        }
        guard body.tokenState == .deactivated else {
            return logger.warning("card state for a digitization never answered, left as it is", fields)
        }
        var result = TspV1.DigitizeResponse()
        result.decision = .declined
        result.tokenState = .deactivated
        result.scheme = card.scheme
        result.panLast4 = card.panLast4
        result.decidedBy = body.initiator
        result.declineReason =
            "the TSP ended the digitization, interrupted before a decision (\(body.reasonCode)); add the card again"
        _ = try store.finishDigitization(id: card.id, result: result, nowMs: clock())
        logger.info("digitization never answered ended by the TSP; card recorded as declined", fields)
    }
}
