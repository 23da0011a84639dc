import TokenetNode
import TokenetWire

/// What the issuer node does with the messages of its broker queue, which its app and its backend share: the TSP's
/// stand-in advice goes to the backend's decisions, every other message to the issuer app.
struct IssuerNodeNotifications: NotificationHandler {
    static let standInAdvice = "STAND_IN_ADVICE"

    let app: IssuerAppNotificationHandler
    let decisions: IssuerDecisionsService
    let logger: Logger

    func handle(_ notification: TspV1.Notification) async throws {
        guard notification.messageType == Self.standInAdvice, case .standInAdvice(let advice)? = notification.body
        else { return try await app.handle(notification) }
        try decisions.recordStandInAdvice(
            advice, digitalCardID: notification.cardID, messageID: notification.messageID, log: logger)
    }
}
