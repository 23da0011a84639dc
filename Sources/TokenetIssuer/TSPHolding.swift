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
            switch card.tokenState {
            case .inactive, .active, .suspended: break
            default: continue
            }
            if !card.panMatches || (!card.expiry.isEmpty && card.expiry != renewal.expiry.description) {
                other += 1
            } else if !card.expiry.isEmpty || renewal.pan != currentPAN {
                renewed += 1
            } else {
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
}
