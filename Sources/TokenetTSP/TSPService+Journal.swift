import TokenetNode
import TokenetWire

/// Every TSP change that notifies its parties commits its notifications with it (`TSPStore.journaling`), then
/// publishes them here. The change stands whatever the broker answers: a message the broker could not take stays
/// journaled, and goes out ahead of the next change's messages (or with the journal's retry, or when the TSP next
/// starts), so receivers, which apply the state a message carries, still see the changes in the order they were
/// made (see `NotificationJournal`).
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
        await journal.publish(journaled.notifications, log: log)
        return journaled.value
    }

    /// CPS CARD_STATE to the wallet and the issuer app, for a change of the token's state or of who holds its
    /// suspension (none when unchanged).
    /// `digitizeRequestID` names the Digitize request of a token whose digitization never answered the wallet.
    /// CARD_STATE DEACTIVATED (ALREADY_PROVISIONED), to the issuer app alone, for a token the issuer approved or
    /// stepped up and the TSP then declined, because the same card had become live in the same wallet on the same
    /// device meanwhile (`DigitizationOutcome.alreadyProvisioned`). The issuer keeps the token it decided as one of
    /// the card's, so without this it counted it live and its card-wide changes failed on it. The wallet got the
    /// decline as its answer and never knew the token.
    static func issuerApprovalOverruled(_ token: TokenRecord) -> [Announcement] {
        let body = TspV1.CardStateBody(
            tokenState: token.state.wire, reasonCode: "ALREADY_PROVISIONED", initiator: "tsp",
            stateVersion: token.stateVersion)
        return [
            Announcement(
                notification: D1.notification(
                    .cardState, from: .cps, cardID: token.digitalCardID, body: .cardState(body)),
                recipients: [.issuerApp])
        ]
    }

    static func cardState(
        _ change: TokenStateChange, reason: String, initiator: String, digitizeRequestID: String = ""
    ) -> [Announcement] {
        // A suspension placed beside another, or lifted while another stands, keeps the state but not its
        // suspensions: it has a new version, and is told too.
        guard change.before.state != change.after.state || change.before.stateVersion != change.after.stateVersion
        else { return [] }
        var body = TspV1.CardStateBody(
            tokenState: change.after.state.wire, reasonCode: reason, initiator: initiator,
            digitizeRequestID: digitizeRequestID, stateVersion: change.after.stateVersion)
        if change.after.state == .suspended {
            body.suspensions = change.suspensions.map {
                TspV1.TokenSuspension(party: $0.party.party, reasonCode: $0.reason)
            }
        }
        return [
            Announcement(
                notification: D1.notification(
                    .cardState, from: .cps, cardID: change.after.digitalCardID, body: .cardState(body)),
                recipients: [.wallet, .issuerApp])
        ]
    }
}
