import Synchronization
import TokenetCard
import TokenetRPC

/// A card's new number and expiry while the renewal waits for the TSP: reserved in the issuer's store (no other card
/// may take the number) but not yet the card's own, which changes only once the TSP has moved the tokens too.
struct PendingRenewal: Sendable, Equatable {
    var pan: PAN
    var expiry: CardExpiry
}

/// What the issuer does with a renewal request, decided from the card's pending renewal alone (no I/O).
///
/// A renewal is two writes on two nodes: the issuer's card and the TSP's tokens. The issuer reserves the new number
/// first, in the transaction that checks it is unused, so two renewals racing for one number are settled before
/// either reaches the TSP, and only then tells the TSP. The card takes the new number once the TSP has answered; a
/// refusal gives the number back, and an answer that never came keeps the reservation so that repeating the
/// renewal completes it. Either way the two sides never disagree without the issuer holding a record of it.
enum RenewalPlan: Sendable, Equatable {
    /// Nothing is pending: check the number and reserve it, then tell the TSP.
    case reserve
    /// This very renewal is pending from an attempt whose TSP answer was lost: tell the TSP again (its renewal of
    /// the tokens can be repeated) and complete it.
    case resume
    /// Another renewal is pending: the TSP may already hold its number, so the card takes no other until that one
    /// is repeated (and completed, or refused by the TSP).
    case refuse(PendingRenewal)

    init(pending: PendingRenewal?, requested: PendingRenewal) {
        switch pending {
        case nil: self = .reserve
        case requested?: self = .resume
        case let other?: self = .refuse(other)
        }
    }
}

/// What becomes of a reserved renewal once the TSP has answered, decided from its answer alone.
enum RenewalSettlement: Sendable, Equatable {
    /// The TSP moved the tokens (or there were none to move): the card takes the reserved number.
    case complete
    /// The TSP refused before changing anything: the tokens keep the old number, so the card does too and the
    /// reserved number is free again.
    case release
    /// The TSP may or may not have moved the tokens (the call timed out, the connection dropped, the TSP failed):
    /// the reservation stays, and the same renewal repeated completes it.
    case keepPending

    /// The settlement after the TSP call failed with `error`. Only a status the TSP gives for a request it checked
    /// and refused before its transaction, or a call the TSP is known never to have processed, releases the number;
    /// anything else might have followed a renewal the TSP made.
    init(failure error: any Error) {
        guard let error = error as? RPCError else {
            self = .keepPending
            return
        }
        if error.callWasNotProcessed {
            self = .release
            return
        }
        switch error.code {
        case .invalidArgument, .notFound, .alreadyExists, .permissionDenied, .failedPrecondition, .outOfRange,
            .unimplemented, .unauthenticated, .resourceExhausted:
            self = .release
        default:
            self = .keepPending
        }
    }
}

/// What a renewal sent to the TSP in its batches (`LifecycleLimits.batches`) came to. The TSP renews each batch in
/// a transaction of its own, so a card with more tokens than one call takes is renewed in several writes, and a
/// failure after the first leaves the TSP holding the new number for the tokens of the batches it answered.
struct RenewalSent {
    /// How many calls the card's tokens took.
    let batches: Int
    /// The tokens the answered batches renewed, in the order sent.
    var renewed: [String] = []
    /// How many batches the TSP answered before `failure` (all of them when there was none).
    var answered = 0
    /// The failure of the call that stopped the renewal; the batches after it were not sent.
    var failure: (any Error)?

    init(batches: Int) { self.batches = batches }

    /// How the reservation is settled: complete once every batch was answered; after a failure of the first batch
    /// as that call's failure says (`RenewalSettlement(failure:)`: a refusal gives the number back); after a failure
    /// of a later one, pending whatever the failure was, since the TSP holds the new number for some tokens and only
    /// the renewal repeated (every batch again) makes the two sides agree.
    var settlement: RenewalSettlement {
        guard let failure else { return .complete }
        return answered == 0 ? RenewalSettlement(failure: failure) : .keepPending
    }
}

/// The cards whose renewal this node is running: one at a time per card, so a second request for a card cannot
/// settle (complete or release) the reservation the first is still waiting on the TSP for.
final class RenewalsUnderWay: Sendable {
    private let cards = Mutex<Set<String>>([])

    /// Claims `cardID`; false when a renewal of that card is already under way.
    func begin(_ cardID: String) -> Bool {
        cards.withLock { $0.insert(cardID).inserted }
    }

    func end(_ cardID: String) {
        _ = cards.withLock { $0.remove(cardID) }
    }
}
