/// Which issuer owns each card the wallet stored without one, decided without I/O: the driver
/// (`WalletIssuerResolver`) feeds it what the TSP answered and performs the actions it returns, in order.
///
/// A card is pending, then resolving (its `GetTokenIssuer` call is under way, one card at a time so a wallet with
/// many old cards does not flood a TSP that has just come back), then recording and resolved (the issuer is stored),
/// not-found (the TSP does not know the card for its account, or knows no issuer for it) or unresolvable (the TSP
/// refused the question, or the store could not record the answer: the card stays hidden from every issuer app, and
/// is asked about again at the next start). A TSP that cannot be reached leaves the card failed-retry: the same card
/// is asked again after a wait that doubles from `firstWaitMs` up to `longestWaitMs`, for as long as the wallet
/// runs, since a card shown to no app is worse than a call that waits.
///
/// Once every card has been asked about, the not-found ones are asked about again, all of them in turn, after a
/// wait that doubles from `firstRecheckWaitMs` up to `longestRecheckWaitMs` (5, 10, 20, 40 minutes, then every
/// hour), for as long as the wallet runs: the TSP may learn of a token later (a TSP restored from a backup, a token
/// moved between accounts). Cards stored without an issuer after the start (`awaiting`) are asked about in the next
/// round too; one stored once every card was resolved (or refused) starts the rechecks again. An issuer app asking for its cards ends such a wait early, but not before
/// `recheckRestMs` have passed since the last round, so an app that asks often makes at most one round a minute.
public struct IssuerResolution: Sendable, Equatable {
    /// A card to resolve: the wallet's id, its token and the wallet account holding it.
    public struct Card: Sendable, Equatable {
        public var cardID: Int64
        public var digitalCardID: String
        public var walletAccountID: String

        public init(cardID: Int64, digitalCardID: String, walletAccountID: String) {
            self.cardID = cardID
            self.digitalCardID = digitalCardID
            self.walletAccountID = walletAccountID
        }
    }

    public enum Phase: Sendable, Equatable {
        case pending
        case resolving
        /// The TSP named the issuer; the store is recording it.
        case recording
        case resolved
        /// The TSP does not know the card for its account (NOT_FOUND), or named no issuer: asked about again in the
        /// next round, after `recheckLater`.
        case notFound
        case unresolvable
        /// Waiting to ask again; `attempts` calls failed in a row.
        case failedRetry(attempts: Int)
    }

    public enum Event: Sendable, Equatable {
        /// The cards stored without an issuer, when the wallet starts.
        case start([Card])
        /// The TSP named the card's issuer.
        case answered(cardID: Int64, issuerID: String, issuerNodeID: String)
        /// The TSP does not know the card (NOT_FOUND: not this wallet account's token, or not one it holds yet).
        case notFound(cardID: Int64)
        /// The TSP refused the question itself (PERMISSION_DENIED and the like): asking again will not change it.
        case refused(cardID: Int64)
        /// The TSP could not be reached or failed; worth asking again.
        case unreachable(cardID: Int64)
        /// The wait after `unreachable` is over.
        case retryDue
        /// The cards stored without an issuer now, read before a round of rechecks, or when a card was stored
        /// without one while no round is to come: those the resolution has not seen (stored since it started, by a
        /// TSP that named no issuer) join the next round, and start the rechecks when none was to come, so they are
        /// asked about while the node runs instead of only at the next start.
        case awaiting([Card])
        /// The wait after `recheckLater` is over.
        case recheckDue
        /// The store recorded the issuer (`record`).
        case recorded(cardID: Int64)
        /// The store could not record it; the card stays hidden and counts as remaining.
        case notRecorded(cardID: Int64)
    }

    public enum Action: Sendable, Equatable {
        /// Call `GetTokenIssuer` for the card.
        case ask(Card)
        /// Store the card's issuer (one transaction), tell that issuer's app about the card, and feed `recorded`
        /// (or `notRecorded`).
        case record(cardID: Int64, issuerID: String, issuerNodeID: String)
        /// Sleep, or less if an issuer app asks for its cards, then feed `retryDue`.
        case wait(milliseconds: UInt64)
        /// Every card has been asked about: log the counts. Given after the first round, and after a later round
        /// only if it resolved a card, so that rounds that change nothing log nothing.
        case finish(resolved: Int, remaining: Int)
        /// Sleep `restMilliseconds`, then up to `waitMilliseconds` more, less if an issuer app asks for its cards
        /// (also if it asked during the rest), then feed `recheckDue`: `round` is the round to come (1 after the
        /// first), `cards` how many not-found cards it will ask about.
        case recheckLater(restMilliseconds: UInt64, waitMilliseconds: UInt64, round: Int, cards: Int)
    }

    public static let firstWaitMs: UInt64 = 1_000
    public static let longestWaitMs: UInt64 = 60_000
    public static let firstRecheckWaitMs: UInt64 = 300_000
    public static let longestRecheckWaitMs: UInt64 = 3_600_000
    /// The part of each wait before a round of rechecks that an issuer app's asking does not cut short.
    public static let recheckRestMs: UInt64 = 60_000

    /// The round of questions under way: 0 for the first, which asks about every card, then 1, 2, … for those that
    /// ask again about the not-found cards.
    public private(set) var round = 0

    public private(set) var cards: [Card] = []
    public private(set) var phases: [Int64: Phase] = [:]

    public init() {}

    public func phase(of cardID: Int64) -> Phase? { phases[cardID] }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .start(let found):
            guard !started else { return [] }
            started = true
            cards = found
            for card in found { phases[card.cardID] = .pending }
            return next()
        case .answered(let id, let issuerID, let nodeID):
            guard phases[id] == .resolving else { return [] }
            guard !issuerID.isEmpty else {
                phases[id] = .notFound
                return next()
            }
            failuresInARow = 0
            phases[id] = .recording
            return [.record(cardID: id, issuerID: issuerID, issuerNodeID: nodeID)]
        case .notFound(let id):
            guard phases[id] == .resolving else { return [] }
            phases[id] = .notFound
            return next()
        case .refused(let id):
            guard phases[id] == .resolving else { return [] }
            phases[id] = .unresolvable
            return next()
        case .unreachable(let id):
            guard phases[id] == .resolving else { return [] }
            let attempts = failuresInARow + 1
            phases[id] = .failedRetry(attempts: attempts)
            return [.wait(milliseconds: Self.wait(afterFailures: attempts))]
        case .retryDue:
            guard let card = current, case .failedRetry(let attempts) = phases[card.cardID] else { return [] }
            failuresInARow = attempts
            phases[card.cardID] = .resolving
            return [.ask(card)]
        case .awaiting(let found):
            // Idle: every card was asked about and none was left to recheck, so no round is to come.
            let idle = started && !awaitingRecheck && current == nil
            guard awaitingRecheck || idle else { return [] }
            let unseen = found.filter { phases[$0.cardID] == nil }
            for card in unseen {
                cards.append(card)
                // Idle, the card starts the rechecks, like a card the TSP did not know: the TSP named no issuer for
                // it when the wallet stored it, so asking at once would tell nothing new.
                phases[card.cardID] = idle ? .notFound : .pending
            }
            return idle && !unseen.isEmpty ? next() : []
        case .recheckDue:
            guard awaitingRecheck else { return [] }
            awaitingRecheck = false
            round += 1
            upcoming = 0
            for card in cards where phases[card.cardID] == .notFound { phases[card.cardID] = .pending }
            return next()
        case .recorded(let id):
            guard phases[id] == .recording else { return [] }
            phases[id] = .resolved
            resolved += 1
            return next()
        case .notRecorded(let id):
            guard phases[id] == .recording else { return [] }
            phases[id] = .unresolvable
            return next()
        }
    }

    private var started = false

    /// Failed calls since the last answer: the next wait grows with them, and the first answer resets them.
    private var failuresInARow = 0

    /// The card being asked about (or waited for), and the index of the next card to ask about: the cards are
    /// asked about in order, so a wallet with many old cards takes linear time.
    private var current: Card?
    private var upcoming = 0
    private var resolved = 0
    /// The resolved count the last `finish` gave, if any.
    private var reported: Int?
    /// A `recheckLater` was given and its `recheckDue` has not come.
    private var awaitingRecheck = false

    /// Asks about the next pending card, or ends the round when none is left.
    private mutating func next() -> [Action] {
        failuresInARow = 0
        current = nil
        while upcoming < cards.count {
            let card = cards[upcoming]
            upcoming += 1
            guard phases[card.cardID] == .pending else { continue }
            phases[card.cardID] = .resolving
            current = card
            return [.ask(card)]
        }
        var actions: [Action] = []
        if reported != resolved {
            reported = resolved
            actions.append(.finish(resolved: resolved, remaining: cards.count - resolved))
        }
        let notFound = cards.count(where: { phases[$0.cardID] == .notFound })
        if notFound > 0 {
            awaitingRecheck = true
            let wait = Self.recheckWait(beforeRound: round + 1)
            let rest = min(Self.recheckRestMs, wait)
            actions.append(
                .recheckLater(
                    restMilliseconds: rest, waitMilliseconds: wait - rest, round: round + 1, cards: notFound))
        }
        return actions
    }

    /// 5, 10, 20 and 40 minutes, then an hour.
    static func recheckWait(beforeRound round: Int) -> UInt64 {
        let doublings = UInt64(min(max(round - 1, 0), 16))
        return min(firstRecheckWaitMs << doublings, longestRecheckWaitMs)
    }

    /// 1 s, 2 s, 4 s, … up to a minute.
    static func wait(afterFailures failures: Int) -> UInt64 {
        let doublings = UInt64(min(max(failures - 1, 0), 16))
        return min(firstWaitMs << doublings, longestWaitMs)
    }
}
