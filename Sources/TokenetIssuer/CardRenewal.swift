import TokenetCard
import TokenetRPC
import TokenetWire

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
    /// and refused before its transaction, or a call the TSP is known never to have processed (or never to have
    /// been sent: the TSP could not be reached), releases the number;
    /// anything else might have followed a renewal the TSP made. RESOURCE_EXHAUSTED is also the TSP's full disk: the
    /// renewal's one write is its transaction, which a full disk fails whole, and what the TSP does after the commit
    /// (publishing the journaled notices) fails no call.
    init(failure error: any Error) {
        guard let error = error as? RPCError else {
            self = .keepPending
            return
        }
        if error.callWasNotProcessed || error.callWasNeverSent {
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
///
/// Within an answered batch the TSP gives each token its own result. A token refused for a reason that renewing
/// again cannot remove (`TokenRenewalResult.permanent`: deleted, unknown to the TSP, another issuer's) does not hold
/// the renewal back: a deleted token has no card to move, and the others could never take one. Any other refusal of
/// a token counts as the batch's failure.
struct RenewalSent {
    /// How many calls the card's tokens took.
    let batches: Int
    /// The tokens the answered batches renewed, in the order sent.
    var renewed: [String] = []
    /// The tokens the TSP answered as deleted, in the order sent.
    var deleted: [String] = []
    /// The tokens the TSP refused for good for another reason (unknown to it, another issuer's), in the order sent.
    var refused: [String] = []
    /// Those of `refused` the TSP does not know (NOT_FOUND), which the issuer records so as not to send them again.
    var unknown: [String] = []
    /// How many batches the TSP answered before `failure` (all of them when there was none).
    var answered = 0
    /// The failure of the call that stopped the renewal; the batches after it were not sent.
    var failure: (any Error)?

    init(batches: Int) { self.batches = batches }

    /// The TSP answered a batch with `response`. A TSP that gives no per-token results (one from before they were
    /// given) renewed every token it names and left the others out as deleted, as it did then.
    mutating func answered(_ response: TspV1.RenewCardResponse) {
        answered += 1
        guard !response.results.isEmpty else {
            renewed += response.renewedDigitalCardIds
            return
        }
        for result in response.results {
            switch TokenRenewalResult(result) {
            case .renewed: renewed.append(result.digitalCardID)
            case .deleted: deleted.append(result.digitalCardID)
            case .refusedForGood: refused.append(result.digitalCardID)
            case .unknownToTSP:
                refused.append(result.digitalCardID)
                unknown.append(result.digitalCardID)
            case .failed(let code):
                // The batch is written, so this counts as a later batch's failure: pending, never released.
                if failure == nil {
                    failure = RPCError(
                        code, "the TSP could not renew token \(result.digitalCardID): \(result.message)")
                }
            }
        }
    }

    /// How the reservation is settled: complete once every batch was answered with no token failing for a passing
    /// reason; after a failure of the first batch's call as that call's failure says (`RenewalSettlement(failure:)`:
    /// a refusal gives the number back); after a failure of a later one, or of a token in an answered batch, pending
    /// whatever the failure was, since the TSP holds the new number for some tokens and only the renewal repeated
    /// (every batch again) makes the two sides agree.
    var settlement: RenewalSettlement {
        guard let failure else { return .complete }
        return answered == 0 ? RenewalSettlement(failure: failure) : .keepPending
    }
}

/// A token's own result in the TSP's answer to a renewal, read for what it means to the renewal.
enum TokenRenewalResult: Equatable {
    /// The token holds the renewed card.
    case renewed
    /// The token is deleted: it has no card to move, and never takes one again.
    case deleted
    /// The TSP does not know the token (NOT_FOUND): it never takes a card, however often it is sent.
    case unknownToTSP
    /// The TSP refused the token for another reason that does not go away: it is another issuer's, say.
    case refusedForGood
    /// The TSP refused the token for a reason that may pass (the status given): the renewal has to be repeated.
    case failed(StatusCode)

    /// The statuses of a refusal that renewing again meets the same way.
    static let permanent: Set<StatusCode> = [.notFound, .permissionDenied, .failedPrecondition, .invalidArgument]

    init(_ result: TspV1.TokenStateResult) {
        if result.tokenState == .deactivated {
            self = .deleted
            return
        }
        guard result.statusCode != 0 else {
            self = .renewed
            return
        }
        let code = StatusCode(rawValue: result.statusCode)
        if code == .notFound {
            self = .unknownToTSP
            return
        }
        self = Self.permanent.contains(code) ? .refusedForGood : .failed(code)
    }
}
