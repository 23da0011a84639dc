import TokenetNode
import TokenetWire

/// What the issuer node does with the messages of its broker queue, which its app and its backend share: the TSP's
/// stand-in advice goes to the backend's decisions (and, for a token made from a card's number or expiry before a
/// renewal, to its card care, which moves the token onto the card as it is), every other message to the issuer app.
struct IssuerNodeNotifications: NotificationHandler {
    static let standInAdvice = "STAND_IN_ADVICE"

    let app: IssuerAppNotificationHandler
    let decisions: IssuerDecisionsService
    let cardCare: IssuerCardCareService
    let logger: Logger
    /// Hears that the stream opened (`IssuerTokenSync`), for what the broker dropped while the node was away.
    var opened: StreamOpenedSignal? = nil

    func streamOpened() {
        opened?.streamOpened()
    }

    func handle(_ notification: TspV1.Notification) async throws {
        guard notification.messageType == Self.standInAdvice, case .standInAdvice(let advice)? = notification.body
        else { return try await app.handle(notification) }
        let id = notification.messageID
        guard
            let plan = try decisions.standInAdvicePlan(
                advice, digitalCardID: notification.cardID, messageID: id, log: logger)
        else { return }
        // Before the record: a TSP that cannot be asked now throws, and the advice comes again with nothing
        // recorded, so the move is tried again.
        if let refusal = plan.refusal {
            try await cardCare.deleteStandInToken(notification.cardID, because: refusal, log: logger)
        } else if plan.outdated, let card = plan.card {
            try await cardCare.moveStandInToken(notification.cardID, onto: card, log: logger)
        }
        try decisions.record(plan, decidedAtMs: advice.decidedAtMs, messageID: id, log: logger)
    }
}
