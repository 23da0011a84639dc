/// Why a card number or expiry was refused. Each check has its own case so eligibility can report exactly which
/// one failed; `message` is written for the person who typed the card in and never repeats the full number.
public enum CardRejection: Sendable, Hashable, CustomStringConvertible {
    /// The card number contains something other than the digits 0–9.
    case nonDigitCharacters
    /// The card number has `length` digits; card numbers have 13 to 19.
    case invalidLength(Int)
    /// The card number's check digit does not match (a typing error).
    case luhnCheckFailed
    /// The card number belongs to no scheme this service tokenizes (Visa, Mastercard).
    case unsupportedScheme
    /// The expiry is not written as `MM/YY`.
    case malformedExpiry
    /// Card data (the JSON inside a JWE) gives its `expirationDate` otherwise than as a month of one or two digits
    /// and a four-digit year from 2000 to 2099, both strings.
    case malformedExpirationDate
    /// The expiry month is outside 01–12.
    case invalidExpiryMonth(Int)
    /// The card expired at the end of this month.
    case expired(CardExpiry)

    public var message: String {
        switch self {
        case .nonDigitCharacters:
            return "the card number must contain only the digits 0-9 (no spaces or dashes)"
        case .invalidLength(let length):
            return "the card number has \(length) digits; card numbers have 13 to 19 digits"
        case .luhnCheckFailed:
            return "the card number's check digit is wrong (Luhn check failed); check it for a typing error"
        case .unsupportedScheme:
            return "the card number is not a Visa (4…) or Mastercard (51–55, 2221–2720) card, "
                + "so it cannot be tokenized"
        case .malformedExpiry:
            return "the expiry date must be written as MM/YY, for example 09/27"
        case .malformedExpirationDate:
            return "the card data's expirationDate must give the month as two digits and the year as four digits "
                + "from 2000 to 2099, both as strings, for example {\"month\": \"09\", \"year\": \"2027\"}"
        case .invalidExpiryMonth(let month):
            return "the expiry month \(month) is not a month; use 01 to 12"
        case .expired(let expiry):
            return "the card expired at the end of \(expiry) and cannot be tokenized"
        }
    }

    public var description: String { message }
}
