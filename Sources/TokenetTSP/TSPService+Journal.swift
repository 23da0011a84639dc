import TokenetNode
import TokenetWire

/// Every TSP change that notifies its parties commits its notifications with it (`TSPStore.journaling`), then
/// publishes them here. The change stands whatever the broker answers: a message the broker could not take stays
/// journaled, and goes out ahead of the next change's messages (or when the TSP next starts), so receivers, which
/// apply the state a message carries, still see the changes in the order they were made.
extension TSPService {
    /// Publishes what `journaled` committed with its change, in order, after anything left journaled before it,
    /// and returns the change's result.
    @discardableResult
    func published<T>(_ journaled: Journaled<T>, log: Logger) async -> T {
        for notification in journaled.unaddressed {
            log.warning(
                "no subscriber known for the token; notification not published",
                ["type": notification.messageType, "digital_card_id": notification.cardID])
        }
        var entries = journaled.notifications
        if journalBacklog.withLock({ $0 }) {
            do {
                // The whole journal, oldest first: the rows left behind and this change's own.
                entries = try NotificationStore(database: store.database).journaled()
                journalBacklog.withLock { $0 = false }
            } catch {
                log.error("the notification journal cannot be read", ["error": String(describing: error)])
            }
        }
        for entry in entries where await !publish(entry, log: log) {
            // What follows would overtake it: it waits in the journal too.
            journalBacklog.withLock { $0 = true }
            break
        }
        return journaled.value
    }

    /// Publishes one journaled message; false when it stays journaled.
    private func publish(_ entry: JournaledNotification, log: Logger) async -> Bool {
        let notification = entry.notification
        do throws(TSPError) {
            if try await !notifications.publish(journaled: entry) {
                try forget(entry)
            }
            log.info(
                "notification published",
                [
                    "type": notification.messageType, "sender": notification.sender,
                    "digital_card_id": notification.cardID, "to": entry.subscribers.joined(separator: ","),
                    "message_id": notification.messageID,
                ])
            return true
        } catch  where error.code == .invalidArgument {
            // Refused for what it is: publishing it again at the next start would be refused the same way.
            log.error(
                "notification refused by the broker; removed from the journal",
                [
                    "type": notification.messageType, "digital_card_id": notification.cardID,
                    "message_id": notification.messageID, "error": error.message,
                ])
            try? forget(entry)
            return true
        } catch {
            log.error(
                "notification could not be published; it stays journaled and goes out before the next ones",
                [
                    "type": notification.messageType, "digital_card_id": notification.cardID,
                    "message_id": notification.messageID, "error": String(describing: error),
                ])
            return false
        }
    }

    private func forget(_ entry: JournaledNotification) throws(TSPError) {
        do {
            try store.forgetJournaled([entry.journalID])
        } catch {
            throw TSPError.internal("removing a published notification from the journal", error)
        }
    }

    /// CPS CARD_STATE to the wallet and the issuer app, for a change of the token's state (none when unchanged).
    static func cardState(_ change: TokenStateChange, reason: String, initiator: String) -> [Announcement] {
        guard change.before.state != change.after.state else { return [] }
        let body = TspV1.CardStateBody(tokenState: change.after.state.wire, reasonCode: reason, initiator: initiator)
        return [
            Announcement(
                notification: D1.notification(
                    .cardState, from: .cps, cardID: change.after.digitalCardID, body: .cardState(body)),
                recipients: [.wallet, .issuerApp])
        ]
    }
}
