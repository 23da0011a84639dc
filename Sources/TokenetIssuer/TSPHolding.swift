import TokenetCard
import TokenetWire

/// What the TSP holds for a card's tokens, measured against a pending renewal: the answer to
/// `IssuerCardUpdates.GetFundingCards`, reduced to what settling the renewal depends on.
enum TSPHolding: Sendable, Equatable {
    /// Every token that still stands for the card holds the renewed number and expiry: the TSP applied the renewal.
    case renewal
    /// No such token holds the renewed card: the TSP did not apply the renewal (or refused it).
    case other
    /// No token stands for the card any more (all deleted, or unknown to the TSP): neither side has anything to
    /// disagree about.
    case noToken
    /// Some tokens hold the renewed card and some do not, or the TSP cannot say (a token whose expiry it never
    /// recorded, in a renewal that changes the expiry only): settling either way could leave the sides differing.
    case unclear

    /// Reads the TSP's answer for the renewal `renewal` of a card whose number is `currentPAN`. A token the TSP does
    /// not know, or has deleted, holds nothing. A number that matches with no recorded expiry is taken as the
    /// renewal when the renewal changes the number (the number alone tells the cards apart), and as unclear when it
    /// changes the expiry only.
    init(_ cards: [TspV1.FundingCard], renewal: PendingRenewal, currentPAN: PAN) {
        var renewed = 0
        var other = 0
        for card in cards {
            switch Self.token(card, renewal: renewal, currentPAN: currentPAN) {
            case nil: continue
            case .holdsRenewal?: renewed += 1
            case .holdsOther?: other += 1
            case .cannotTell?:
                self = .unclear
                return
            }
        }
        switch (renewed, other) {
        case (0, 0): self = .noToken
        case (_, 0): self = .renewal
        case (0, _): self = .other
        default: self = .unclear
        }
    }

    /// The live tokens of `cards` not known to hold `renewal` (holding another card, or one the TSP cannot tell
    /// apart from it), in their order: those a renewal forced complete leaves behind.
    static func notHolding(_ cards: [TspV1.FundingCard], renewal: PendingRenewal, currentPAN: PAN) -> [String] {
        cards.filter {
            switch token($0, renewal: renewal, currentPAN: currentPAN) {
            case nil, .holdsRenewal?: false
            case .holdsOther?, .cannotTell?: true
            }
        }.map(\.digitalCardID)
    }

    private enum Token { case holdsRenewal, holdsOther, cannotTell }

    /// What one token holds; nil for a token that stands for no card (deleted, or unknown to the TSP).
    private static func token(_ card: TspV1.FundingCard, renewal: PendingRenewal, currentPAN: PAN) -> Token? {
        switch card.tokenState {
        case .inactive, .active, .suspended: break
        default: return nil
        }
        if !card.panMatches || (!card.expiry.isEmpty && card.expiry != renewal.expiry.description) {
            return .holdsOther
        }
        return !card.expiry.isEmpty || renewal.pan != currentPAN ? .holdsRenewal : .cannotTell
    }
}
