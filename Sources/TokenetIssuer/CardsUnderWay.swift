import Synchronization

/// The cards on which this node is running one kind of work with the TSP, one at a time per card:
/// - renewals (`IssuerCardCareService.renewals`), so a second request for a card cannot settle (complete or release)
///   the reservation the first is still waiting on the TSP for;
/// - changes of a card's tokens with its block or opening (`tokenChanges`), so the making again of a pending change
///   cannot reach the TSP after the operator's newer change of the same card and undo it.
final class CardsUnderWay: Sendable {
    private let cards = Mutex<Set<String>>([])

    /// Claims `cardID`; false when work of this kind on that card is already under way.
    func begin(_ cardID: String) -> Bool {
        cards.withLock { $0.insert(cardID).inserted }
    }

    func end(_ cardID: String) {
        _ = cards.withLock { $0.remove(cardID) }
    }
}
