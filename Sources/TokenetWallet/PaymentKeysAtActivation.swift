import Foundation
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

/// Issues a card's first batch of limited-use payment keys when its token becomes ACTIVE, however that happened
/// (approved at digitization, ID&V, or a resume), by listening to the wallet's own events like the issuer app does.
struct PaymentKeysAtActivation: Sendable {
    let store: WalletStore
    let updates: WalletTokenUpdates
    let logger: Logger
    /// Waits the given milliseconds between catch-up rounds; throws when the node stops (the task is cancelled).
    var sleep: @Sendable (UInt64) async throws -> Void = { try await Task.sleep(for: .milliseconds($0)) }

    /// Listens until the task is cancelled. Each time it starts listening (at start, and after the hub dropped it
    /// for falling behind) it first gives a batch to the ACTIVE cards that have none, whose activation it did not
    /// hear: a wallet stopped right after an activation, or a burst of events it fell behind on, left them without
    /// keys until their first payment found none.
    func run(_ hub: WalletEventHub) async {
        while !Task.isCancelled {
            // Listening first: a card activated while the catch-up runs is heard too.
            let subscription = hub.subscribe()
            await catchUp()
            for await event in subscription.events {
                // The activation's flow: the ReplenishPaymentKeys call, and what it logs, carry its trace id.
                await FlowTrace.run(event.traceID) { await handle(event) }
            }
            guard hub.wasDropped(subscription.id) else { return }
            logger.warning("payment keys at activation: fell behind the wallet's events; listening again")
        }
    }

    /// Gives a first batch to every ACTIVE card without keys. The cards the TSP could not be asked about
    /// (UNAVAILABLE) are tried again after each of `retryWaitsMs`, while they still lack keys (the listener may have
    /// served one meanwhile); after the last, the next start or a dropped listener tries again.
    func catchUp() async {
        var retrying: Set<Int64>?
        for round in 0... {
            let cards: [WalletCardRecord]
            do {
                cards = try store.activeCardsWithoutKeys().filter { retrying?.contains($0.id) ?? true }
            } catch {
                // A damaged page is the operator's to mend, and no retry reads it: said at error level with what to do,
                // as a call that meets it says (DATA_LOSS).
                if (error.cause as? StorageError)?.code == .corrupt {
                    return logger.error(
                        "the wallet's database is damaged: stop the wallet and restore "
                            + "\(WalletNode.databaseFileName) in its data directory from a backup",
                        ["error": "\(error)"])
                }
                return logger.warning(
                    "the active cards without payment keys could not be read", ["error": "\(error)"])
            }
            var unreachable: Set<Int64> = []
            for card in cards {
                do {
                    try await updates.replenish(card, reason: "activation not yet served")
                } catch  where Task.isCancelled {
                    return logger.info(Self.stoppedWaiting, ["card_ref": card.cardRef])
                } catch  where error.code == .failedPrecondition {
                    // No longer ACTIVE at the TSP (a suspend or delete this wallet has not heard of yet, its message
                    // on its way): no keys are due, and the card's state catches up with the message.
                    logger.info(
                        "payment keys not issued: the TSP refused them, as it does for a token no longer ACTIVE; its "
                            + "reason follows",
                        ["card_ref": card.cardRef, "error": "\(error)"])
                } catch {
                    // Said once at warning level; the retries are the same story.
                    logger.log(
                        round == 0 ? .warning : .debug, "payment keys could not be issued to an active card",
                        ["card_ref": card.cardRef, "error": "\(error)"])
                    if error.code == .unavailable { unreachable.insert(card.id) }
                }
            }
            guard !unreachable.isEmpty else { return }
            guard round < Self.retryWaitsMs.count else {
                return logger.warning(
                    "payment keys: the TSP could not be reached for some active cards; trying again at the next start",
                    ["cards": "\(unreachable.count)"])
            }
            do {
                try await sleep(Self.retryWaitsMs[round])
            } catch {
                return
            }
            retrying = unreachable
        }
    }

    /// The waits before each retry of the cards the TSP could not be asked about: doubling from a second, about
    /// two minutes in all, so a TSP that restarts with the wallet is caught up with without asking it forever.
    static let retryWaitsMs: [UInt64] = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000]

    /// An ACTIVE token without keys gets its first batch, and one that became ACTIVE again (a resume) at or below
    /// the threshold a new one: a batch its payments asked for while it was suspended was refused, and the card
    /// stayed low until its next payment. Anything else is left alone.
    func handle(_ event: WalletV1.WalletEvent) async {
        guard event.kind == .tokenizedCardAdded || event.kind == .tokenStatusChanged, event.tokenState == .active
        else { return }
        do {
            guard let card = try store.card(digitalCardID: event.digitalCardID) else { return }
            let keys = try store.paymentKeys(cardID: card.id)
            if keys.batches == 0 {
                try await updates.replenish(card, reason: "activation")
            } else if keys.remaining <= WalletTokenUpdates.keyThreshold {
                try await updates.replenish(
                    card, reason: "active again below threshold", ifAtMost: WalletTokenUpdates.keyThreshold)
            }
        } catch  where error.code == .failedPrecondition {
            // Deleted or suspended since it was activated (a delete racing the activation): no keys are due.
            logger.info(
                "payment keys not issued at activation: the TSP refused them, as it does for a token no longer ACTIVE; "
                    + "its reason follows",
                ["digital_card_id": event.digitalCardID, "error": "\(error)"])
        } catch  where Task.isCancelled {
            logger.info(Self.stoppedWaiting, ["digital_card_id": event.digitalCardID])
        } catch {
            logger.warning(
                "payment keys could not be issued at activation",
                ["digital_card_id": event.digitalCardID, "error": "\(error)"])
        }
    }

    /// The node stopped while the TSP was asked for a first batch: its own doing, not the TSP's refusal, and the
    /// TSP may have issued the keys. Said as a warning that they "could not be issued: cancelled by the caller", it
    /// read as someone else's refusal.
    static let stoppedWaiting =
        "payment keys: the node stopped before the TSP answered; the batch may have been issued, and an ACTIVE card "
        + "still without keys is served at the next start"
}
