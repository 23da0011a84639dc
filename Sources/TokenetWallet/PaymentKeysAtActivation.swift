import Foundation
import TokenetNode
import TokenetWire

/// Issues a card's first batch of limited-use payment keys when its token becomes ACTIVE, however that happened
/// (approved at digitization, ID&V, or a resume), by listening to the wallet's own events like the issuer app does.
struct PaymentKeysAtActivation: Sendable {
    let store: WalletStore
    let updates: WalletTokenUpdates
    let logger: Logger

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
                await handle(event)
            }
            guard hub.wasDropped(subscription.id) else { return }
            logger.warning("payment keys at activation: fell behind the wallet's events; listening again")
        }
    }

    /// Gives a first batch to every ACTIVE card without keys.
    func catchUp() async {
        let cards: [WalletCardRecord]
        do {
            cards = try store.activeCardsWithoutKeys()
        } catch {
            return logger.warning("the active cards without payment keys could not be read", ["error": "\(error)"])
        }
        for card in cards {
            do {
                try await updates.replenish(card, reason: "activation not yet served")
            } catch {
                logger.warning(
                    "payment keys could not be issued to an active card",
                    ["card_ref": card.cardRef, "error": "\(error)"])
            }
        }
    }

    /// An ACTIVE token without keys gets its first batch; anything else is left alone.
    func handle(_ event: WalletV1.WalletEvent) async {
        guard event.kind == .tokenizedCardAdded || event.kind == .tokenStatusChanged, event.tokenState == .active
        else { return }
        do {
            guard let card = try store.card(digitalCardID: event.digitalCardID),
                try store.paymentKeys(cardID: card.id).batches == 0
            else { return }
            try await updates.replenish(card, reason: "activation")
        } catch {
            logger.warning(
                "payment keys could not be issued at activation",
                ["digital_card_id": event.digitalCardID, "error": "\(error)"])
        }
    }
}
