import Synchronization
import TokenetNode
import TokenetWire

/// The issuer app's processing of the messages the TSP's broker delivers: the pure `IssuerAppInbox` decides, this
/// driver carries the action out (the card view is refreshed; the rest is kept for operators and logged).
public final class IssuerAppNotificationHandler: NotificationHandler {
    private let inbox = Mutex(IssuerAppInbox())
    let view: IssuerAppView
    let logger: Logger

    public init(view: IssuerAppView, logger: Logger) {
        self.view = view
        self.logger = logger
    }

    public func handle(_ notification: TspV1.Notification) async {
        let action = inbox.withLock { $0.receive(notification) }
        let what: String
        switch action {
        case .refreshCardState(let cardID, let state):
            view.update { $0.apply(cardState: state, digitalCardID: cardID) }
            what = "card state refreshed"
        case .noteReplenishment:
            what = "payment keys replenishment noted"
        case .showTransaction:
            what = "transaction shown"
        case .askCardholder:
            what = "cardholder asked to authenticate a transaction"
        case .resynchroniseCardIDs:
            what = "card ids resynchronised after a renewal"
        case .showMessage:
            what = "message shown"
        case .handToApp:
            what = "message handed to the app"
        }
        logger.info(
            "issuer app: \(what)",
            [
                "message_id": notification.messageID, "sender": notification.sender,
                "type": notification.messageType, "digital_card_id": notification.cardID,
            ])
    }

    public var snapshot: IssuerAppInbox { inbox.withLock { $0 } }

    func pendingAuthn(_ id: String) throws(IssuerAppInbox.AnswerRefusal) -> IssuerV1.AppAuthn {
        try inbox.withLock { inbox throws(IssuerAppInbox.AnswerRefusal) in try inbox.pendingAuthn(id) }
    }

    func answered(_ id: String, status: String) {
        inbox.withLock { $0.answered(id, status: status) }
    }
}
