import TokenetNode

/// Keeps ACTIVE cards' payment keys topped up in the background: a refill that a payment asked for and did not get
/// (the TSP away, or slower than the payment waits) is asked for again every `intervalMs`, where it used to wait for
/// the card's next payment or a resume, and a card could sit at its last keys for as long as nobody paid.
///
/// Each card's request keeps its id until its batch is recorded (`WalletStore.keyRequestID`), so asking again never
/// makes the TSP issue a batch the wallet does not count.
struct PaymentKeysTopUp: Sendable {
    let store: WalletStore
    let updates: WalletTokenUpdates
    let logger: Logger
    /// Waits the given milliseconds between rounds; throws when the node stops (the task is cancelled).
    var sleep: @Sendable (UInt64) async throws -> Void = { try await Task.sleep(for: .milliseconds($0)) }

    /// A minute: soon enough for a wallet whose TSP came back, and a few requests an hour while it stays away.
    static let intervalMs: UInt64 = 60_000

    /// How long one card's request waits for the TSP: a TSP that holds it (stopped, not gone) must not hold the
    /// other cards' rounds back.
    static let answerWait = Duration.seconds(10)

    /// Rounds every `intervalMs` until the task is cancelled (the node stops).
    func run() async {
        var failingBefore = 0
        while true {
            do {
                try await sleep(Self.intervalMs)
            } catch {
                return
            }
            failingBefore = await round(failingBefore: failingBefore)
        }
    }

    /// Asks for a batch for each ACTIVE card at or below the threshold; returns how many could not get one. A
    /// warning is logged when cards start failing or their number changes, not every minute of a long outage.
    @discardableResult
    func round(failingBefore: Int = 0) async -> Int {
        let cards: [WalletCardRecord]
        do {
            cards = try store.activeCardsLowOnKeys(threshold: WalletTokenUpdates.keyThreshold)
        } catch {
            logger.warning("the active cards low on payment keys could not be read", ["error": "\(error)"])
            return failingBefore
        }
        var failing = 0
        for card in cards {
            do {
                _ = try await updates.replenishIfLow(
                    card, reason: "topped up in the background", atMost: WalletTokenUpdates.keyThreshold,
                    within: Self.answerWait)
            } catch {
                failing += 1
                logger.debug(
                    "payment keys could not be topped up", ["card_ref": card.cardRef, "error": error.message])
            }
        }
        if failing > 0 && failing != failingBefore {
            logger.warning(
                "payment keys: cards at their last keys could not get a new batch; asking again every minute",
                ["cards": "\(failing)"])
        }
        return failing
    }
}
