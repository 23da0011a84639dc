import Synchronization
import TokenetNode
import TokenetWire

/// The issuer app's processing of the messages the TSP's broker delivers: the pure `IssuerAppInbox` decides, this
/// driver carries the action out (the card view is refreshed; the rest is kept for operators and logged).
public final class IssuerAppNotificationHandler: NotificationHandler {
    private let inbox: Mutex<IssuerAppInbox>
    let view: IssuerAppView
    let logger: Logger
    /// Where the app keeps its messages across restarts; nil keeps them in memory only (tests of the pure flow).
    let store: IssuerStore?

    /// A handler that keeps nothing across restarts (tests of the pure flow).
    public convenience init(view: IssuerAppView, logger: Logger) {
        self.init(view: view, logger: logger, inbox: IssuerAppInbox(), store: nil)
    }

    /// Rebuilds the inbox from the messages and answers kept by an earlier run: the inbox is a pure function of
    /// them, so replaying them gives back the same notifications, pending requests and card ids.
    convenience init(view: IssuerAppView, logger: Logger, store: IssuerStore) throws(IssuerError) {
        var inbox = IssuerAppInbox()
        for kept in try store.appNotifications() { _ = inbox.receive(kept.notification, row: kept.row) }
        for answer in try store.authnAnswers() { inbox.answered(answer.id, status: answer.status) }
        self.init(view: view, logger: logger, inbox: inbox, store: store)
    }

    private init(view: IssuerAppView, logger: Logger, inbox: IssuerAppInbox, store: IssuerStore?) {
        self.view = view
        self.logger = logger
        self.inbox = Mutex(inbox)
        self.store = store
    }

    public func handle(_ notification: TspV1.Notification) async throws {
        // Kept first: a storage failure throws, and the subscriber delivers the message again.
        var row: Int64?
        if let store {
            row = try store.keepAppNotification(notification, capacity: IssuerAppInbox.capacity)
            guard row != nil else {
                logger.debug("notification kept before; not processed again", ["message_id": notification.messageID])
                return
            }
        }
        let action = inbox.withLock { $0.receive(notification, row: row) }
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

    func answered(_ id: String, status: String) throws(IssuerError) {
        try store?.recordAuthnAnswer(id, status: status)
        inbox.withLock { $0.answered(id, status: status) }
    }
}
