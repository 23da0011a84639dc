import Foundation

/// A card's expiry month. A card is valid through the last day of its expiry month, so it has passed only once
/// that month is over. Months are judged in UTC so every node agrees on the answer.
public struct CardExpiry: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// 1–12.
    public let month: Int
    /// The four-digit year, for example 2027.
    public let year: Int

    public init(month: Int, year: Int) throws(CardError) {
        guard (1...12).contains(month) else { throw CardError(rejection: .invalidExpiryMonth(month)) }
        // To 2099: every record and message gives the year in two digits (MM/YY, as cards print it), and 2100 came
        // back as 00, an expiry long past.
        guard (2000...2099).contains(year) else {
            throw CardError(
                .invalidCard,
                "the expiry year \(year) is out of range; use a four-digit year from 2000 to 2099",
                rejection: .malformedExpiry
            )
        }
        self.month = month
        self.year = year
    }

    /// Parses the `MM/YY` form printed on cards (`YY` is 20YY).
    public init(parsing text: String) throws(CardError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count == 2, parts[1].utf8.count == 2,
            let month = Int(parts[0]), let shortYear = Int(parts[1]),
            parts[0].utf8.allSatisfy({ (48...57).contains($0) }), parts[1].utf8.allSatisfy({ (48...57).contains($0) })
        else { throw CardError(rejection: .malformedExpiry) }
        try self.init(month: month, year: 2000 + shortYear)
    }

    /// The expiry month of a moment, in UTC.
    public init(containing date: Date) {
        let parts = Self.utcCalendar.dateComponents([.year, .month], from: date)
        self.month = parts.month!
        self.year = parts.year!
    }

    /// `MM/YY`.
    public var description: String {
        let mm = month < 10 ? "0\(month)" : "\(month)"
        let yy = year % 100 < 10 ? "0\(year % 100)" : "\(year % 100)"
        return "\(mm)/\(yy)"
    }

    /// True once the whole expiry month has passed at `date` (UTC): a card expiring 12/27 is still valid on
    /// 31 December 2027 at 23:59:59 UTC and has passed from 1 January 2028 00:00 UTC.
    public func hasPassed(asOf date: Date) -> Bool {
        date >= endOfValidity
    }

    /// The first instant (UTC) at which the card is no longer valid: the start of the month after the expiry month.
    public var endOfValidity: Date {
        var parts = DateComponents()
        parts.year = month == 12 ? year + 1 : year
        parts.month = month == 12 ? 1 : month + 1
        parts.day = 1
        return Self.utcCalendar.date(from: parts)!
    }

    /// The expiry `months` later (negative for earlier).
    public func adding(months: Int) -> CardExpiry {
        let index = year * 12 + (month - 1) + months
        // Floor division keeps the month in 1...12 even for a (nonsensical) negative index.
        let (quotient, remainder) = index.quotientAndRemainder(dividingBy: 12)
        return remainder < 0
            ? CardExpiry(validMonth: remainder + 13, year: quotient - 1)
            : CardExpiry(validMonth: remainder + 1, year: quotient)
    }

    public static func < (lhs: CardExpiry, rhs: CardExpiry) -> Bool {
        (lhs.year, lhs.month) < (rhs.year, rhs.month)
    }

    private init(validMonth: Int, year: Int) {
        self.month = validMonth
        self.year = year
    }

    static let utcCalendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}
