import TokenetNode
import TokenetWire

/// Every TSP change that notifies its parties commits its notifications with it (`TSPStore.journaling`), then
/// publishes them here. The change stands whatever the broker answers: a message the broker could not take stays
/// journaled and is published when the TSP next starts.
extension TSPService {
    /// Publishes what `journaled` committed with its change, in order, and returns the change's result.
    @discardableResult
    func published<T>(_ journaled: Journaled<T>, log: Logger) async -> T {
        for notification in journaled.unaddressed {
            log.warning(
                "no subscriber known for the token; notification not published",
                ["type": notification.messageType, "digital_card_id": notification.cardID])
        }
        for entry in journaled.notifications {
            await publish(entry, log: log)
        }
        return journaled.value
    }

    private func publish(_ entry: JournaledNotification, log: Logger) async {
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
        } catch  where error.code == .invalidArgument {
            // Refused for what it is: publishing it again at the next start would be refused the same way.
            log.error(
                "notification refused by the broker; removed from the journal",
                [
                    "type": notification.messageType, "digital_card_id": notification.cardID,
                    "message_id": notification.messageID, "error": error.message,
                ])
            try? forget(entry)
        } catch {
            log.error(
                "notification could not be published; it stays journaled for the next start",
                [
                    "type": notification.messageType, "digital_card_id": notification.cardID,
                    "message_id": notification.messageID, "error": String(describing: error),
                ])
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
