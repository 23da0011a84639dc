import Foundation
import Synchronization
import TokenetNode
import TokenetWire

/// The issuer app's processing of the messages the TSP's broker delivers: the pure `IssuerAppInbox` decides, this
/// driver carries the action out (the card view is refreshed; the rest is kept for operators and logged).
public final class IssuerAppNotificationHandler: NotificationHandler {
    private let inbox: Mutex<IssuerAppInbox>
    /// The last row of the store's deleted tokens the inbox has forgotten the card ids of
    /// (`forgetCardIDsOfDeletedTokens`).
    private let deletedTokensSeen: Mutex<Int64>
    let view: IssuerAppView
    let logger: Logger
    /// Where the app keeps its messages across restarts; nil keeps them in memory only (tests of the pure flow).
    let store: IssuerStore?
    /// How long an ended authentication request stays (`prune`).
    let retention: IssuerRetention
    /// How long the issuer's outbox keeps a message once it was sent and its code expired (`prune`).
    let outboxRetention: IssuerRetention
    let now: @Sendable () -> Date

    /// A handler that keeps nothing across restarts (tests of the pure flow).
    public convenience init(
        view: IssuerAppView, logger: Logger, retention: IssuerRetention = IssuerRetention(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(
            view: view, logger: logger, inbox: IssuerAppInbox(), store: nil, retention: retention,
            outboxRetention: IssuerRetention(), now: now)
    }

    /// Rebuilds the inbox from what an earlier run kept: its messages, and the authentication requests and card ids
    /// their actions left (derived from the messages once, for a database from before those were kept apart; so are
    /// the deleted tokens, for one from before those were recorded). Then
    /// prunes the requests, enrolments and outbox messages whose retention ran out while the node was down.
    convenience init(
        view: IssuerAppView, logger: Logger, store: IssuerStore, retention: IssuerRetention = IssuerRetention(),
        outboxRetention: IssuerRetention = IssuerRetention(), now: @escaping @Sendable () -> Date = { Date() }
    ) throws(IssuerError) {
        let imported = try store.importAppInboxState(nowMs: Self.milliseconds(now()))
        if imported.authn + imported.cardIDs > 0 {
            logger.info(
                "the app's authentication requests and card ids were derived from its kept messages",
                ["authn_requests": "\(imported.authn)", "card_ids": "\(imported.cardIDs)"])
        }
        let deleted = try store.backfillDeletedTokens(nowMs: Self.milliseconds(now()))
        if deleted > 0 {
            logger.info(
                "tokens deleted before the issuer recorded deleted tokens were recorded from the app's kept messages",
                ["tokens": "\(deleted)"])
        }
        try store.dropCardIDsOfDeletedTokens()
        let seen = try store.lastDeletedTokenRow()
        let inbox = IssuerAppInbox(
            restoring: try store.appNotifications(), authn: try store.appAuthnRequests(),
            cardIdentities: try store.appCardIdentities())
        self.init(
            view: view, logger: logger, inbox: inbox, store: store, retention: retention,
            outboxRetention: outboxRetention, now: now, deletedTokensSeen: seen)
        try prune()
    }

    private init(
        view: IssuerAppView, logger: Logger, inbox: IssuerAppInbox, store: IssuerStore?, retention: IssuerRetention,
        outboxRetention: IssuerRetention, now: @escaping @Sendable () -> Date, deletedTokensSeen: Int64 = 0
    ) {
        self.view = view
        self.logger = logger
        self.inbox = Mutex(inbox)
        self.deletedTokensSeen = Mutex(deletedTokensSeen)
        self.store = store
        self.retention = retention
        self.outboxRetention = outboxRetention
        self.now = now
    }

    static func milliseconds(_ date: Date) -> UInt64 { UInt64(max(0, date.timeIntervalSince1970 * 1000)) }

    var nowMs: UInt64 { Self.milliseconds(now()) }

    /// Keeps `notification` in the app's inbox (see `IssuerStore.keepAppNotification`). A storage failure (a full
    /// disk) is the node's own: said at error level in the words of its status, which say what to do, as the wallet
    /// says it; the subscriber's warning that follows only tells of the retry.
    private func keep(_ notification: TspV1.Notification, in store: IssuerStore, nowMs: UInt64) throws(IssuerError)
        -> Int64?
    {
        do {
            return try store.keepAppNotification(
                notification, action: IssuerAppInbox.classify(notification, arrivedAtMs: nowMs).1, nowMs: nowMs,
                capacity: IssuerAppInbox.capacity)
        } catch {
            if error.code == .storage {
                logger.error(
                    "issuer app: notification could not be kept; it comes again",
                    ["message_id": notification.messageID, "error": error.rpcError.message])
            }
            throw error
        }
    }

    public func handle(_ notification: TspV1.Notification) async throws {
        // Kept first: a storage failure throws, and the subscriber delivers the message again.
        var row: Int64?
        let nowMs = self.nowMs
        if let store {
            row = try keep(notification, in: store, nowMs: nowMs)
            guard row != nil else {
                logger.debug("notification kept before; not processed again", ["message_id": notification.messageID])
                return
            }
        }
        let action = inbox.withLock { $0.receive(notification, row: row, nowMs: nowMs) }
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
        case .dropLateAuthn(let body):
            logger.info(
                "issuer app: authentication request arrived after its expiry; not asked, not listed",
                [
                    "message_id": notification.messageID, "authn_request_id": body.authnRequestID,
                    "expires_at_ms": "\(body.expiresAtMs)", "published_at_ms": "\(notification.publishedAtMs)",
                    "delivery_attempt": "\(notification.deliveryAttempt)",
                ])
            return
        case .resynchroniseCardIDs(let digitalCardID, _):
            // A renewal's message that came after its token's delete keeps no card id (the store kept none).
            // The message is kept already, so a failure here is not thrown (its redelivery would be dropped as kept
            // before): it is said, and the start's own check (`dropCardIDsOfDeletedTokens`) repairs the listing.
            do {
                if let store, try store.isDeleted(digitalCardID) {
                    inbox.withLock { $0.forgetCardIdentities(of: [digitalCardID]) }
                }
            } catch {
                logger.warning(
                    "issuer app: could not check whether a renewed token was deleted; its card ids may show in the "
                        + "app's listing until the node restarts",
                    ["message_id": notification.messageID, "digital_card_id": digitalCardID, "error": "\(error)"])
            }
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

    /// The request the cardholder is about to answer now (`IssuerAppInbox.pendingAuthn`).
    func pendingAuthn(_ id: String) throws(IssuerAppInbox.AnswerRefusal) -> IssuerV1.AppAuthn {
        let nowMs = self.nowMs
        return try inbox.withLock { inbox throws(IssuerAppInbox.AnswerRefusal) in
            try inbox.pendingAuthn(id, nowMs: nowMs)
        }
    }

    /// The digital card authentication request `id` is about (`IssuerAppInbox.card(ofAuthn:)`).
    func card(ofAuthn id: String) -> String? { inbox.withLock { $0.card(ofAuthn: id) } }

    /// The page of the app's listing `request` asks for, as it stands now.
    func page(_ request: PageRequest) throws(IssuerError) -> IssuerV1.AppNotificationsResponse {
        try forgetCardIDsOfDeletedTokens()
        return try snapshot.page(request, nowMs: nowMs)
    }

    /// Forgets the card ids of the tokens recorded deleted since the last look. A CARD_STATE DEACTIVATED message
    /// forgets its token's as it is processed; a delete the issuer learned otherwise (its check with the TSP, once
    /// the broker's retention dropped the message; the TSP's answer to a change) is recorded in the store only, and
    /// the app listed that token's card id until the node restarted, and after. Reads only the rows added since.
    func forgetCardIDsOfDeletedTokens() throws(IssuerError) {
        guard let store else { return }
        let after = deletedTokensSeen.withLock { $0 }
        let (ids, lastRow) = try store.deletedTokens(after: after)
        guard !ids.isEmpty else { return }
        inbox.withLock { $0.forgetCardIdentities(of: Set(ids)) }
        deletedTokensSeen.withLock { $0 = max($0, lastRow) }
    }

    func answered(_ id: String, status: String) throws(IssuerError) {
        let nowMs = self.nowMs
        try store?.recordAuthnAnswer(id, status: status, nowMs: nowMs)
        inbox.withLock { $0.answered(id, status: status, nowMs: nowMs) }
    }

    /// Forgets, in the store and in memory, the authentication requests whose retention has run out, deletes the
    /// enrolments whose activation code expired as long ago (nobody can activate with them any more), and deletes the
    /// outbox messages sent and past their code's expiry for `outboxRetention`; returns how many requests. The node
    /// does it at start and every `sweepInterval`.
    @discardableResult
    func prune() throws(IssuerError) -> Int {
        let nowMs = self.nowMs
        let pruned = try pruneAppAuthn(nowMs: nowMs)
        if let store, let cutoff = outboxRetention.cutoffMs(nowMs: nowMs) {
            let messages = try store.pruneOutbox(endedAtOrBefore: cutoff)
            if messages > 0 {
                logger.info("outbox messages pruned", ["count": "\(messages)", "kept_ms": "\(outboxRetention.keepMs)"])
            }
        }
        return pruned
    }

    private func pruneAppAuthn(nowMs: UInt64) throws(IssuerError) -> Int {
        guard let cutoff = retention.cutoffMs(nowMs: nowMs) else { return 0 }
        let stored = try store?.pruneAppAuthnRequests(endedAtOrBefore: cutoff) ?? 0
        let forgotten = inbox.withLock { $0.prune(nowMs: nowMs, retention: retention) }.count
        let pruned = max(stored, forgotten)
        if pruned > 0 {
            logger.info(
                "ended authentication requests pruned", ["count": "\(pruned)", "kept_ms": "\(retention.keepMs)"])
        }
        let enrolments = try store?.pruneEnrolments(endedAtOrBefore: cutoff) ?? 0
        if enrolments > 0 {
            logger.info(
                "enrolments whose activation code expired pruned",
                ["count": "\(enrolments)", "kept_ms": "\(retention.keepMs)"])
        }
        return pruned
    }

    /// How often a running node prunes: the shorter of the two retentions' sweep intervals (every hour by default).
    var sweepInterval: Duration { min(retention.sweepInterval, outboxRetention.sweepInterval) }

    /// Prunes every `sweepInterval` until the task is cancelled (the node stops).
    func pruneUntilCancelled() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: sweepInterval)
            } catch {
                return
            }
            do {
                try prune()
            } catch {
                logger.warning(
                    "cannot prune the app's authentication requests, the enrolments and the outbox",
                    ["error": error.message])
            }
        }
    }
}
