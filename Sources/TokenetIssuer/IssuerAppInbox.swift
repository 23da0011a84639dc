import Foundation
import TokenetWire

/// The issuer app's notifications as a pure state machine: each message received yields the one action the app
/// takes, and is kept (with what was done) for operators. Authentication requests wait here for the cardholder's
/// answer; renewals keep the issuer's card id of each digital card.
public struct IssuerAppInbox: Sendable, Equatable {
    /// Kept messages; the oldest are dropped beyond this many.
    public static let capacity = 500

    public enum Action: Sendable, Equatable {
        case refreshCardState(cardID: String, state: CardV1.TokenState)
        case noteReplenishment(cardID: String, keysIssued: UInt32)
        case showTransaction(cardID: String, TspV1.TransactionBody, lastCallTimestampMs: UInt64?)
        case askCardholder(TspV1.AuthnBody)
        case resynchroniseCardIDs(digitalCardID: String, TspV1.CardRenewalBody)
        case showMessage(cardID: String, TspV1.MessagingBody)
        /// Another sender or topic, an unknown type, or a known type without its body: the app's own business.
        case handToApp(TspV1.Notification)
    }

    public enum AnswerRefusal: Error, Sendable, Equatable {
        case unknown(String)
        case alreadyAnswered(String, status: String)
    }

    public private(set) var notifications: [IssuerV1.AppNotification] = []
    public private(set) var authnRequests: [IssuerV1.AppAuthn] = []
    public private(set) var cardIdentities: [String: IssuerV1.AppCardIdentity] = [:]
    /// The row each of `notifications` was kept under (its place in `Notifications` pages), in the same order.
    private(set) var notificationRows: [Int64] = []
    /// The row of the message that asked each of `authnRequests`, in the same order (increasing, as they are added).
    private(set) var authnRows: [Int64] = []

    public init() {}

    /// Processes a message kept under `row` (the store's row id, which the app's pages are keyed by and which stays
    /// the same across restarts); nil numbers it after the last one (an inbox kept in memory only).
    public mutating func receive(_ notification: TspV1.Notification, row: Int64? = nil) -> Action {
        let row = row ?? (notificationRows.last ?? 0) + 1
        let action: Action
        var entry = IssuerV1.AppNotification(notification: notification)
        switch IssuerAppNotifications.processNotification(notification) {
        case .handedBack(let original):
            action = .handToApp(original)
        case .processed(let processed):
            entry.processed = true
            entry.messageType = processed.type.rawValue
            entry.cardID = processed.cardID ?? ""
            entry.lastCallTimestampMs = processed.lastCallTimestampMs ?? 0
            action = Self.action(for: processed, notification)
        }
        entry.action = apply(action, row: row)
        notifications.append(entry)
        notificationRows.append(row)
        if notifications.count > Self.capacity {
            notifications.removeFirst(notifications.count - Self.capacity)
            notificationRows.removeFirst(notificationRows.count - Self.capacity)
        }
        return action
    }

    /// The request the cardholder is about to answer, refused when unknown or already answered.
    public func pendingAuthn(_ id: String) throws(AnswerRefusal) -> IssuerV1.AppAuthn {
        guard let request = authnRequests.first(where: { $0.authnRequestID == id }) else {
            throw .unknown(id)
        }
        guard request.status == "PENDING" else { throw .alreadyAnswered(id, status: request.status) }
        return request
    }

    /// Records the TSP's answer to the cardholder's choice.
    public mutating func answered(_ id: String, status: String) {
        guard let index = authnRequests.firstIndex(where: { $0.authnRequestID == id }) else { return }
        authnRequests[index].status = status
    }

    public var response: IssuerV1.AppNotificationsResponse {
        IssuerV1.AppNotificationsResponse(
            notifications: notifications, authnRequests: authnRequests,
            cardIds: cardIdentities.keys.sorted().map { cardIdentities[$0]! })
    }

    private static func action(for processed: ProcessedNotification, _ notification: TspV1.Notification) -> Action {
        let cardID = processed.cardID ?? ""
        switch (processed.type, notification.body) {
        case (.cardState, .cardState(let body)?) where !cardID.isEmpty:
            return .refreshCardState(cardID: cardID, state: body.tokenState)
        case (.replenishment, let body) where !cardID.isEmpty:
            guard case .replenishment(let keys)? = body else {
                return .noteReplenishment(cardID: cardID, keysIssued: 0)
            }
            return .noteReplenishment(cardID: cardID, keysIssued: keys.keysIssued)
        case (.transactionNotification, .transaction(let body)?) where !cardID.isEmpty:
            return .showTransaction(cardID: cardID, body, lastCallTimestampMs: processed.lastCallTimestampMs)
        case (.authn, .authn(let body)?) where !body.authnRequestID.isEmpty:
            return .askCardholder(body)
        case (.cardRenewal, .cardRenewal(let body)?):
            return .resynchroniseCardIDs(digitalCardID: notification.cardID, body)
        case (.messaging, .messaging(let body)?) where !cardID.isEmpty:
            return .showMessage(cardID: cardID, body)
        default:
            return .handToApp(notification)
        }
    }

    /// Applies the action to the inbox's own state and says, for people, what the app did.
    private mutating func apply(_ action: Action, row: Int64) -> String {
        switch action {
        case .refreshCardState(let cardID, let state):
            return "card \(cardID) is now \(Self.name(state))"
        case .noteReplenishment(let cardID, let keys):
            return keys == 0
                ? "card \(cardID): payment keys replenishment requested"
                : "card \(cardID): \(keys) payment keys issued"
        case .showTransaction(let cardID, let body, _):
            let verdict = body.approved ? "approved" : "declined"
            return "card \(cardID): \(Self.amount(body.amountMinor, body.currency)) at \(body.merchant) (\(verdict))"
        case .askCardholder(let body):
            if !authnRequests.contains(where: { $0.authnRequestID == body.authnRequestID }) {
                authnRequests.append(
                    IssuerV1.AppAuthn(
                        authnRequestID: body.authnRequestID, amountMinor: body.amountMinor, currency: body.currency,
                        merchant: body.merchant, status: "PENDING"))
                authnRows.append(row)
            }
            return "authenticate \(Self.amount(body.amountMinor, body.currency)) at \(body.merchant)? "
                + "(request \(body.authnRequestID): proceed or cancel)"
        case .resynchroniseCardIDs(let digitalCardID, let body):
            if !digitalCardID.isEmpty {
                cardIdentities[digitalCardID] = IssuerV1.AppCardIdentity(
                    digitalCardID: digitalCardID, cardID: body.newCardID, panLast4: body.panLast4,
                    expiry: body.expiry)
            }
            return "card ids resynchronised: \(body.previousCardID) -> \(body.newCardID) (ending \(body.panLast4), "
                + "expires \(body.expiry))"
        case .showMessage(let cardID, let body):
            let offer = body.action.isEmpty ? "" : " [\(body.action)]"
            return "message about card \(cardID): \(body.title) — \(body.body)\(offer)"
        case .handToApp(let notification):
            return "handed to the app (sender \(notification.sender), topic \(notification.topic), "
                + "type \(notification.messageType))"
        }
    }

    static func name(_ state: CardV1.TokenState) -> String {
        (state.protoValueName ?? "UNKNOWN").replacingOccurrences(of: "TOKEN_STATE_", with: "")
    }

    /// 1250 USD → "12.50 USD" (two minor digits, which every currency used here has).
    static func amount(_ minor: Int64, _ currency: String) -> String {
        let sign = minor < 0 ? "-" : ""
        let value = minor.magnitude
        let cents = value % 100
        return "\(sign)\(value / 100).\(cents < 10 ? "0" : "")\(cents) \(currency)"
    }
}
