/// Which issuer owns each card the wallet stored without one, decided without I/O: the driver
/// (`WalletIssuerResolver`) feeds it what the TSP answered and performs the actions it returns, in order.
///
/// A card is pending, then resolving (its `GetTokenIssuer` call is under way, one card at a time so a wallet with
/// many old cards does not flood a TSP that has just come back), then recording and resolved (the issuer is stored) or
/// unresolvable (the TSP refused: the card stays hidden from every issuer app, and is asked about again at the next
/// start). A TSP that cannot be reached leaves the card failed-retry: the same card is asked again after a wait
/// that doubles from `firstWaitMs` up to `longestWaitMs`, for as long as the wallet runs, since a card shown to no
/// app is worse than a call that waits.
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
        case unresolvable
        /// Waiting to ask again; `attempts` calls failed in a row.
        case failedRetry(attempts: Int)
    }

    public enum Event: Sendable, Equatable {
        /// The cards stored without an issuer, when the wallet starts.
        case start([Card])
        /// The TSP named the card's issuer.
        case answered(cardID: Int64, issuerID: String, issuerNodeID: String)
        /// The TSP refused (NOT_FOUND: not this wallet account's token, or an answer without an issuer).
        case refused(cardID: Int64)
        /// The TSP could not be reached or failed; worth asking again.
        case unreachable(cardID: Int64)
        /// The wait after `unreachable` is over.
        case retryDue
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
        /// Sleep, then feed `retryDue`.
        case wait(milliseconds: UInt64)
        /// Nothing is left to ask: log the counts.
        case finish(resolved: Int, remaining: Int)
    }

    public static let firstWaitMs: UInt64 = 1_000
    public static let longestWaitMs: UInt64 = 60_000

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
                phases[id] = .unresolvable
                return next()
            }
            failuresInARow = 0
            phases[id] = .recording
            return [.record(cardID: id, issuerID: issuerID, issuerNodeID: nodeID)]
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

    /// Asks about the next pending card, or finishes when none is left.
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
        return [.finish(resolved: resolved, remaining: cards.count - resolved)]
    }

    /// 1 s, 2 s, 4 s, … up to a minute.
    static func wait(afterFailures failures: Int) -> UInt64 {
        let doublings = UInt64(min(max(failures - 1, 0), 16))
        return min(firstWaitMs << doublings, longestWaitMs)
    }
}
