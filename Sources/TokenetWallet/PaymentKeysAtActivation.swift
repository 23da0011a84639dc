import Foundation
import TokenetNode
import TokenetWire

/// Issues a card's first batch of limited-use payment keys when its token becomes ACTIVE, however that happened
/// (approved at digitization, ID&V, or a resume), by listening to the wallet's own events like the issuer app does.
struct PaymentKeysAtActivation: Sendable {
    let store: WalletStore
    let updates: WalletTokenUpdates
    let logger: Logger

    /// Listens until the hub drops this listener or the task is cancelled.
    func run(_ hub: WalletEventHub) async {
        let subscription = hub.subscribe()
        for await event in subscription.events {
            await handle(event)
        }
        if hub.wasDropped(subscription.id) {
            logger.warning("payment keys at activation: fell behind the wallet's events and stopped")
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
