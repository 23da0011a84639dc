import Foundation
import TokenetNode
import TokenetWire

/// The issuer app's notifications as a pure state machine: each message received yields the one action the app
/// takes, and is kept (with what was done) for operators. Authentication requests wait here for the cardholder's
/// answer and are kept, once ended, for `IssuerRetention`'s time (`prune`); renewals keep the issuer's card id of
/// each digital card until the token is deleted.
public struct IssuerAppInbox: Sendable, Equatable {
    /// Kept messages; the oldest are dropped beyond this many.
    public static let capacity = 500

    public enum Action: Sendable, Equatable {
        case refreshCardState(cardID: String, state: CardV1.TokenState)
        case noteReplenishment(cardID: String, keysIssued: UInt32)
        case showTransaction(cardID: String, TspV1.TransactionBody, lastCallTimestampMs: UInt64?)
        case askCardholder(TspV1.AuthnBody)
        /// An AUTHN that arrived after its expiry: a very late first delivery, or a redelivery of a request the app
        /// has since pruned (its message id gone from the newest `capacity`). No request is made of it: nobody can
        /// answer it any more, and one pruned may have been answered, which a request made again would contradict.
        case dropLateAuthn(TspV1.AuthnBody)
        case resynchroniseCardIDs(digitalCardID: String, TspV1.CardRenewalBody)
        case showMessage(cardID: String, TspV1.MessagingBody)
        /// Another sender or topic, an unknown type, or a known type without its body: the app's own business.
        case handToApp(TspV1.Notification)

        /// The card id the app keeps for a digital card after this action, if it changes it: `.some(nil)` when it
        /// forgets it (the token was deleted, so nobody needs its card id).
        var cardIdentity: (digitalCardID: String, IssuerV1.AppCardIdentity?)? {
            switch self {
            case .resynchroniseCardIDs(let digitalCardID, let body) where !digitalCardID.isEmpty:
                return (
                    digitalCardID,
                    IssuerV1.AppCardIdentity(
                        digitalCardID: digitalCardID, cardID: body.newCardID, panLast4: body.panLast4,
                        expiry: body.expiry)
                )
            case .refreshCardState(let cardID, .deactivated) where !cardID.isEmpty:
                return (cardID, nil)
            default:
                return nil
            }
        }

        /// The authentication request a payment's TRANSACTION_NOTIFICATION says the cardholder answered, and how
        /// (PROCEEDED or CANCELLED): the app records it as answered when it still lists it PENDING, because the
        /// TSP's answer to the app's own AnswerAuthn was lost (a deadline, a connection, a stop), and it had gone on
        /// listing the request PENDING, then EXPIRED, beside the approved payment. An expiry is left to the
        /// request's own, which the app applies as the TSP does.
        var settledAuthn: (id: String, status: String)? {
            guard case .showTransaction(_, let body, _) = self, !body.authnRequestID.isEmpty,
                body.authnStatus == "PROCEEDED" || body.authnStatus == "CANCELLED"
            else { return nil }
            return (body.authnRequestID, body.authnStatus)
        }

        /// The token this action learns is deleted at the TSP (CARD_STATE DEACTIVATED, a state no token leaves,
        /// whoever deleted it: the wallet, the TSP or the issuer), which the issuer's renewals and card-wide token
        /// changes then leave out.
        var deletedToken: String? {
            guard case .refreshCardState(let cardID, .deactivated) = self, !cardID.isEmpty else { return nil }
            return cardID
        }
    }

    /// The token a message from the TSP (one the app processes: its senders, its topic) names, which shows the TSP
    /// knows it, whatever the message says of it; the issuer then no longer records it as unknown to the TSP.
    static func knownToken(_ notification: TspV1.Notification) -> String? {
        guard case .processed = IssuerAppNotifications.processNotification(notification),
            !notification.cardID.isEmpty
        else { return nil }
        return notification.cardID
    }

    public enum AnswerRefusal: Error, Sendable, Equatable {
        case unknown(String)
        case alreadyAnswered(String, status: String)
        /// Never answered, and its expiry (`endsAtMs`) has passed: the TSP refuses a late answer.
        case expired(String, endsAtMs: UInt64)
        /// Its AUTHN message arrived after its expiry (`expiresAtMs`), so nobody was asked (`dropLateAuthn`).
        case arrivedLate(String, expiresAtMs: UInt64)
    }

    /// How the listing ends the action of an AUTHN that arrived after its expiry (`dropLateAuthn`).
    static let lateAuthnAction = "arrived after its expiry: not asked"

    /// The status of a request nobody has answered yet.
    public static let pending = "PENDING"
    /// The status a request is listed with once its expiry has passed unanswered; never kept, only shown.
    public static let expired = "EXPIRED"

    /// An authentication request as the app keeps it: the row of the message that asked it (its place in
    /// `Notifications` pages) and when it ended or ends (`IssuerRetention`).
    public struct KeptAuthn: Sendable, Equatable {
        public var request: IssuerV1.AppAuthn
        public var row: Int64
        public var endsAtMs: UInt64
    }

    public private(set) var notifications: [IssuerV1.AppNotification] = []
    /// In the order they were asked (rows increasing).
    public private(set) var authn: [KeptAuthn] = []
    public private(set) var cardIdentities: [String: IssuerV1.AppCardIdentity] = [:]
    /// The row each of `notifications` was kept under (its place in `Notifications` pages), in the same order.
    private(set) var notificationRows: [Int64] = []

    /// The requests as kept: PENDING until answered, also past their expiry (see `authnRequests(nowMs:)`).
    public var authnRequests: [IssuerV1.AppAuthn] { authn.map(\.request) }

    public init() {}

    /// A message as the app keeps it: its row, and when it arrived (nil for one kept before arrivals were recorded).
    public struct KeptNotification: Sendable, Equatable {
        public var notification: TspV1.Notification
        public var row: Int64
        public var arrivedAtMs: UInt64?

        public init(notification: TspV1.Notification, row: Int64, arrivedAtMs: UInt64?) {
            self.notification = notification
            self.row = row
            self.arrivedAtMs = arrivedAtMs
        }
    }

    /// The inbox an earlier run left: its kept messages (listed again, without acting on them twice), and the
    /// authentication requests and card ids their actions left, as kept apart from the messages (which only the
    /// newest `capacity` are). Each message is described by the action it had when it arrived: an AUTHN dropped as
    /// late stays "not asked" rather than inviting an answer to a request that does not exist, and one asked whose
    /// request was pruned since says it ended (`describeEnded`), since nothing can answer it any more.
    public init(restoring kept: [KeptNotification], authn: [KeptAuthn], cardIdentities: [IssuerV1.AppCardIdentity]) {
        self.authn = authn.sorted { $0.row < $1.row }
        var keptStatus: [String: String] = [:]
        for kept in authn { keptStatus[kept.request.authnRequestID] = kept.request.status }
        for message in kept.suffix(Self.capacity) {
            var (entry, action) = Self.classify(message.notification, arrivedAtMs: message.arrivedAtMs)
            if case .askCardholder(let body) = action, let status = keptStatus[body.authnRequestID],
                status != Self.pending
            {
                entry.action = Self.describeAnswered(body, status: status)
            } else if case .askCardholder(let body) = action, keptStatus[body.authnRequestID] == nil {
                entry.action = Self.describeEnded(body)
            } else {
                entry.action = Self.describe(action, message.notification)
            }
            notifications.append(entry)
            notificationRows.append(message.row)
        }
        for identity in cardIdentities { self.cardIdentities[identity.digitalCardID] = identity }
    }

    /// Processes a message kept under `row` (the store's row id, which the app's pages are keyed by and which stays
    /// the same across restarts), received at `nowMs`; nil numbers it after the last one (an inbox kept in memory
    /// only). `arriving` is false for a message read again from an older database (`importAppInboxState`), whose
    /// requests were made when it arrived, so none is dropped as late.
    public mutating func receive(
        _ notification: TspV1.Notification, row: Int64? = nil, nowMs: UInt64 = 0, arriving: Bool = true
    ) -> Action {
        let row = row ?? (notificationRows.last ?? 0) + 1
        var (entry, action) = Self.classify(notification, arrivedAtMs: arriving ? nowMs : nil)
        apply(action, cardID: notification.cardID, row: row, nowMs: nowMs)
        entry.action = Self.describe(action, notification)
        notifications.append(entry)
        notificationRows.append(row)
        if notifications.count > Self.capacity {
            notifications.removeFirst(notifications.count - Self.capacity)
            notificationRows.removeFirst(notificationRows.count - Self.capacity)
        }
        return action
    }

    /// The entry listed for a message (without what the app did) and the action the app takes; `arrivedAtMs` is when
    /// it arrived, which decides whether an AUTHN came too late to ask (nil when that is not known: a message read
    /// again from an older database, asked when it arrived).
    static func classify(_ notification: TspV1.Notification, arrivedAtMs: UInt64? = nil)
        -> (IssuerV1.AppNotification, Action)
    {
        var entry = IssuerV1.AppNotification(notification: notification)
        switch IssuerAppNotifications.processNotification(notification) {
        case .handedBack(let original):
            return (entry, .handToApp(original))
        case .processed(let processed):
            entry.processed = true
            entry.messageType = processed.type.rawValue
            entry.cardID = processed.cardID ?? ""
            entry.lastCallTimestampMs = processed.lastCallTimestampMs ?? 0
            return (entry, Self.action(for: processed, notification, arrivedAtMs: arrivedAtMs))
        }
    }

    /// The digital card an authentication request is about, from the AUTHN message that brought it (the message's
    /// own card id: the listing shows none for an AUTHN); nil when the app no longer holds that message.
    public func card(ofAuthn id: String) -> String? {
        if let kept = authn.first(where: { $0.request.authnRequestID == id }), !kept.request.digitalCardID.isEmpty {
            return kept.request.digitalCardID
        }
        let cardID = notifications.last { entry in
            guard case .authn(let body)? = entry.notification?.body else { return false }
            return body.authnRequestID == id
        }?.notification?.cardID
        return cardID?.isEmpty == false ? cardID : nil
    }

    /// The request the cardholder is about to answer at `nowMs`, refused when unknown, already answered, or
    /// expired (the TSP refuses an answer at or after the expiry, so the app does not send it).
    public func pendingAuthn(_ id: String, nowMs: UInt64) throws(AnswerRefusal) -> IssuerV1.AppAuthn {
        guard let kept = authn.first(where: { $0.request.authnRequestID == id }) else {
            // Its message kept as one that came too late (a request pruned since it ended is unknown now).
            let late = notifications.lazy.compactMap { entry -> TspV1.AuthnBody? in
                guard entry.action.hasSuffix(Self.lateAuthnAction), case .authn(let body)? = entry.notification?.body,
                    body.authnRequestID == id
                else { return nil }
                return body
            }.first
            if let late { throw .arrivedLate(id, expiresAtMs: late.expiresAtMs) }
            throw .unknown(id)
        }
        switch Self.status(of: kept, nowMs: nowMs) {
        case Self.pending: return kept.request
        case Self.expired: throw .expired(id, endsAtMs: kept.endsAtMs)
        case let status: throw .alreadyAnswered(id, status: status)
        }
    }

    /// The status a request is listed with at `nowMs`: its answer (PROCEEDED, CANCELLED), PENDING until its expiry,
    /// then EXPIRED, as the TSP sees it (an answer at or after the expiry is refused).
    public static func status(of kept: KeptAuthn, nowMs: UInt64) -> String {
        kept.request.status == pending && nowMs >= kept.endsAtMs ? expired : kept.request.status
    }

    /// The requests as listed at `nowMs` (`status(of:nowMs:)`), in the order they were asked.
    public func authnRequests(nowMs: UInt64) -> [IssuerV1.AppAuthn] {
        authn.map { Self.listed($0, nowMs: nowMs) }
    }

    static func listed(_ kept: KeptAuthn, nowMs: UInt64) -> IssuerV1.AppAuthn {
        var request = kept.request
        request.status = status(of: kept, nowMs: nowMs)
        return request
    }

    /// Records the TSP's answer to the cardholder's choice, given at `nowMs`: the request has ended.
    public mutating func answered(_ id: String, status: String, nowMs: UInt64) {
        guard let index = authn.firstIndex(where: { $0.request.authnRequestID == id }) else { return }
        authn[index].request.status = status
        authn[index].endsAtMs = IssuerRetention.endsAtMs(authn[index].endsAtMs, answeredAtMs: nowMs)
        // The message that asked it stops inviting an answer: it said "proceed or cancel" beside a request
        // listed as PROCEEDED.
        relabelAsking([id]) { Self.describeAnswered($0, status: status) }
    }

    /// Gives the entries that asked the requests `ids` (and still say so) the label `label` makes.
    private mutating func relabelAsking(_ ids: Set<String>, _ label: (TspV1.AuthnBody) -> String) {
        for index in notifications.indices {
            // Only the entry that asked it: a redelivery dropped as late already says it was not asked.
            guard case .authn(let body)? = notifications[index].notification?.body, ids.contains(body.authnRequestID),
                notifications[index].action.hasPrefix(Self.asking(body))
            else { continue }
            notifications[index].action = label(body)
        }
    }

    /// Forgets the authentication requests whose retention has run out at `nowMs`; returns their ids. The messages
    /// that asked them are listed as ended (`describeEnded`) instead of inviting an answer nothing can take.
    @discardableResult
    public mutating func prune(nowMs: UInt64, retention: IssuerRetention) -> [String] {
        let pruned = authn.filter { retention.prunes(endsAtMs: $0.endsAtMs, nowMs: nowMs) }
        guard !pruned.isEmpty else { return [] }
        authn.removeAll { retention.prunes(endsAtMs: $0.endsAtMs, nowMs: nowMs) }
        relabelAsking(Set(pruned.map(\.request.authnRequestID))) { Self.describeEnded($0) }
        return pruned.map(\.request.authnRequestID)
    }

    /// Forgets the card ids of tokens learned deleted other than by their CARD_STATE DEACTIVATED message.
    public mutating func forgetCardIdentities(of digitalCardIDs: Set<String>) {
        for id in digitalCardIDs { cardIdentities[id] = nil }
    }

    public var response: IssuerV1.AppNotificationsResponse {
        IssuerV1.AppNotificationsResponse(
            notifications: notifications, authnRequests: authnRequests,
            cardIds: cardIdentities.keys.sorted().map { cardIdentities[$0]! })
    }

    private static func action(
        for processed: ProcessedNotification, _ notification: TspV1.Notification, arrivedAtMs: UInt64?
    ) -> Action {
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
            guard let arrivedAtMs, Self.expiredOnArrival(body, notification, arrivedAtMs: arrivedAtMs) else {
                return .askCardholder(body)
            }
            return .dropLateAuthn(body)
        case (.cardRenewal, .cardRenewal(let body)?):
            return .resynchroniseCardIDs(digitalCardID: notification.cardID, body)
        case (.messaging, .messaging(let body)?) where !cardID.isEmpty:
            return .showMessage(cardID: cardID, body)
        default:
            return .handToApp(notification)
        }
    }

    /// Applies the action to the inbox's own state: a new authentication request waits, one a payment reports
    /// answered ends, a card id is resynchronised or, with its token deleted, forgotten.
    private mutating func apply(_ action: Action, cardID: String, row: Int64, nowMs: UInt64) {
        if let (id, status) = action.settledAuthn,
            authn.contains(where: { $0.request.authnRequestID == id && $0.request.status == Self.pending })
        {
            answered(id, status: status, nowMs: nowMs)
        }
        if case .askCardholder(let body) = action,
            !authn.contains(where: { $0.request.authnRequestID == body.authnRequestID })
        {
            authn.append(Self.asked(body, digitalCardID: cardID, row: row, nowMs: nowMs))
        }
        if let (digitalCardID, identity) = action.cardIdentity {
            cardIdentities[digitalCardID] = identity
        }
    }

    /// Whether an AUTHN arriving at `arrivedAtMs` had expired already: at its `expires_at_ms`, or, without one, the
    /// TSP's lifetime after it was published (after it arrived, when the broker did not say), so that a redelivery
    /// weeks later does not come back pending for another lifetime from its arrival.
    static func expiredOnArrival(_ body: TspV1.AuthnBody, _ notification: TspV1.Notification, arrivedAtMs: UInt64)
        -> Bool
    {
        let sentAtMs = notification.publishedAtMs != 0 ? notification.publishedAtMs : arrivedAtMs
        return IssuerRetention.endsAtMs(expiresAtMs: body.expiresAtMs, receivedAtMs: sentAtMs) <= arrivedAtMs
    }

    /// The request an AUTHN message kept under `row` asks, received at `nowMs`: pending until answered or expired.
    static func asked(_ body: TspV1.AuthnBody, digitalCardID: String = "", row: Int64, nowMs: UInt64) -> KeptAuthn {
        KeptAuthn(
            request: IssuerV1.AppAuthn(
                authnRequestID: body.authnRequestID, amountMinor: body.amountMinor, currency: body.currency,
                merchant: body.merchant, status: pending, digitalCardID: digitalCardID),
            row: row, endsAtMs: IssuerRetention.endsAtMs(expiresAtMs: body.expiresAtMs, receivedAtMs: nowMs))
    }

    /// What the app did with `notification`, for people: a card state also says why and who changed it, as the
    /// wallet's inbox does ("SUSPENDED (LOST_CARD by issuer)"), and the suspensions that stand beside it ("; held by
    /// wallet (DEVICE_LOST), issuer (LOST_CARD)").
    static func describe(_ action: Action, _ notification: TspV1.Notification) -> String {
        let text = describe(action)
        guard case .refreshCardState = action, case .cardState(let body)? = notification.body,
            !body.reasonCode.isEmpty || !body.initiator.isEmpty
        else { return text }
        let reason = body.reasonCode.isEmpty ? "" : body.reasonCode
        let initiator = body.initiator.isEmpty ? "" : "\(reason.isEmpty ? "" : " ")by \(body.initiator)"
        return "\(text) (\(reason)\(initiator)\(body.heldSuspensionsShown))"
    }

    /// What the app did, for people.
    static func describe(_ action: Action) -> String {
        switch action {
        case .refreshCardState(let cardID, let state):
            return "card \(cardID) is now \(Self.name(state))"
        case .noteReplenishment(let cardID, let keys):
            return keys == 0
                ? "card \(cardID): payment keys replenishment requested"
                : "card \(cardID): \(keys) payment keys issued"
        case .showTransaction(let cardID, let body, _):
            let verdict: String
            switch (body.approved, body.authnStatus) {
            case (true, _): verdict = "approved"
            case (false, "CANCELLED"): verdict = "declined: the cardholder cancelled it"
            case (false, "EXPIRED"): verdict = "declined: its authentication request expired unanswered"
            case (false, "PROCEEDED"):
                verdict = "declined: its token was no longer active when the cardholder proceeded"
            case (false, _): verdict = "declined"
            }
            return
                "card \(cardID): \(CurrencyAmount.format(body.amountMinor, body.currency)) at \(body.merchant) (\(verdict))"
        case .askCardholder(let body):
            return asking(body) + "proceed or cancel)"
        case .resynchroniseCardIDs(_, let body):
            return "card ids resynchronised: \(body.previousCardID) -> \(body.newCardID) (ending \(body.panLast4), "
                + "expires \(body.expiry))"
        case .showMessage(let cardID, let body):
            let offer = body.action.isEmpty ? "" : " [\(body.action)]"
            return "message about card \(cardID): \(body.title) — \(body.body)\(offer)"
        case .dropLateAuthn(let body):
            return
                "authentication request \(body.authnRequestID) (\(CurrencyAmount.format(body.amountMinor, body.currency)) at "
                + "\(body.merchant)) \(Self.lateAuthnAction)"
        case .handToApp(let notification):
            return "handed to the app (sender \(notification.sender), topic \(notification.topic), "
                + "type \(notification.messageType))"
        }
    }

    /// An AUTHN whose request the cardholder answered (or that expired): what was asked, and how it ended.
    static func describeAnswered(_ body: TspV1.AuthnBody, status: String) -> String {
        asking(body) + "\(status))"
    }

    /// How the entry of an AUTHN the app asked begins, whether it waits for an answer or has one.
    static func asking(_ body: TspV1.AuthnBody) -> String {
        "authenticate \(CurrencyAmount.format(body.amountMinor, body.currency)) at \(body.merchant)? "
            + "(request \(body.authnRequestID): "
    }

    /// An AUTHN whose request the app asked and has since pruned (its retention ran out once it was answered or
    /// expired): listed for what it was, without inviting an answer, which would be refused as unknown.
    static func describeEnded(_ body: TspV1.AuthnBody) -> String {
        "authentication request \(body.authnRequestID) (\(CurrencyAmount.format(body.amountMinor, body.currency)) at "
            + "\(body.merchant)) was asked and has ended; no longer kept, so there is nothing to answer"
    }

    static func name(_ state: CardV1.TokenState) -> String {
        (state.protoValueName ?? "UNKNOWN").replacingOccurrences(of: "TOKEN_STATE_", with: "")
    }
}
