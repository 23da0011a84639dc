import Foundation

/// Token expiry dates. A token outlives the plastic it was provisioned from only as long as policy allows, and, like
/// a card, is valid through the end of its expiry month.
public enum TokenExpiry {
    /// The expiry `years` after the month containing `date` (UTC): issued on 15 March 2026 with 3 years, the token
    /// expires 03/29 and is valid through 31 March 2029.
    public static func expiry(issuedAt date: Date, years: Int = 3) -> CardExpiry {
        CardExpiry(containing: date).adding(months: years * 12)
    }
}
