import Foundation
import TokenetNode
import TokenetWire

/// The wallet's processing of the messages the TSP's broker delivers. Every message is kept in the inbox (once per
/// message id: a redelivered message is not processed again). Messages from CPS, MG and TNS on the D1 topic act:
/// CARD_STATE updates the token and tells the issuer app's listeners, TRANSACTION_NOTIFICATION is added to the
/// transaction list, REPLENISHMENT fetches a new batch of payment keys; MESSAGING is shown from the inbox.
public final class WalletNotificationHandler: NotificationHandler {
    static let senders: Set<String> = ["CPS", "MG", "TNS"]

    let store: WalletStore
    let updates: WalletTokenUpdates
    let logger: Logger
    let clock: @Sendable () -> UInt64

    init(store: WalletStore, updates: WalletTokenUpdates, logger: Logger, clock: @escaping @Sendable () -> UInt64) {
        self.store = store
        self.updates = updates
        self.logger = logger
        self.clock = clock
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
        do throws(WalletError) {
            guard try store.keep(notification, nowMs: clock()) else {
                logger.debug("notification seen before", ["message_id": notification.messageID])
                return
            }
            try await process(notification)
        } catch {
            guard error.code == .unavailable else {
                return logger.error(
                    "notification could not be processed",
                    [
                        "message_id": notification.messageID, "type": notification.messageType,
                        "error": String(describing: error),
                    ])
            }
            // A peer the action needs (the TSP, for a new key batch) is unreachable: forget the message so that
            // its redelivery is processed, and have the subscriber deliver it again.
            try store.forget(messageID: notification.messageID)
            throw error
        }
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
            guard let card else { return logger.warning("card state for an unknown card", fields) }
            try updates.apply(body.tokenState, to: card)
            logger.info("token state updated from the TSP", fields)
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
        case .messaging?:
            logger.info("message received", fields)
        default:
            logger.info("notification kept", fields)
        }
    }
}
