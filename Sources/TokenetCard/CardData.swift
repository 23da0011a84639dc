import Foundation
import TokenetWire

/// The card data carried inside a JWE, in the JSON shape token service providers use:
/// `{"accountNumber":"…","expirationDate":{"month":"12","year":"2027"},"cvv2":"123","name":"…"}`.
///
/// `description` masks the account number and hides the CVV2, so the struct can be interpolated into log lines.
public struct CardData: Codable, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public struct ExpirationDate: Codable, Sendable, Equatable {
        /// Two digits, `01`–`12`.
        public var month: String
        /// Four digits, for example `2027`.
        public var year: String

        public init(month: String, year: String) {
            self.month = month
            self.year = year
        }

        public init(_ expiry: CardExpiry) {
            self.month = expiry.month < 10 ? "0\(expiry.month)" : "\(expiry.month)"
            self.year = "\(expiry.year)"
        }
    }

    public var accountNumber: String
    public var expirationDate: ExpirationDate
    public var cvv2: String?
    public var name: String?

    public init(accountNumber: String, expirationDate: ExpirationDate, cvv2: String? = nil, name: String? = nil) {
        self.accountNumber = accountNumber
        self.expirationDate = expirationDate
        self.cvv2 = cvv2
        self.name = name
    }

    public init(pan: PAN, expiry: CardExpiry, cvv2: String? = nil, name: String? = nil) {
        self.init(accountNumber: pan.digits, expirationDate: ExpirationDate(expiry), cvv2: cvv2, name: name)
    }

    /// Whether the card came without its security code by a way other than the issuer's own app (BANK_APP, a push
    /// the issuer made, which needs no code): the issuer does not approve such a card outright, nor the TSP's
    /// stand-in at all, or a card number and expiry alone (a leaked list, with no codes) got a live token.
    public func lacksSecurityCode(enteredBy input: CardV1.InputMethod) -> Bool {
        (cvv2 ?? "").isEmpty && input != .bankApp
    }

    /// Parses the JSON payload; throws `.invalidPayload` naming what is wrong (never echoing the payload).
    public init(json bytes: [UInt8]) throws(CardError) {
        do {
            self = try JSONDecoder().decode(CardData.self, from: Data(bytes))
        } catch let DecodingError.keyNotFound(key, _) {
            throw CardError(.invalidPayload, "the card data has no \"\(key.stringValue)\" field")
        } catch let DecodingError.typeMismatch(_, context) where !context.codingPath.isEmpty {
            throw CardError(.invalidPayload, "the card data field \(Self.path(context)) has the wrong type")
        } catch let DecodingError.valueNotFound(_, context) {
            throw CardError(.invalidPayload, "the card data field \(Self.path(context)) is null")
        } catch {
            throw CardError(.invalidPayload, "the decrypted payload is not a JSON card-data object")
        }
        // Two account numbers (or expiries) in one payload: Foundation's decoder kept one without a word, and the
        // card decided on may not be the one a reader of the payload sees. The name is told only when it is one of
        // letters, so that no value slipped into a name is echoed.
        if let repeated = try? JSONValue(parsing: String(decoding: bytes, as: UTF8.self)).firstRepeatedKey {
            let named = repeated.count <= 64 && repeated.allSatisfy { $0.isASCII && ($0.isLetter || $0 == ".") }
            throw CardError(
                .invalidPayload, "the card data names \(named ? "\"\(repeated)\"" : "a field") twice; give each once")
        }
    }

    /// The JSON payload with keys in a fixed order; absent optional fields are omitted.
    public func jsonBytes() throws(CardError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(self))
        } catch {
            throw CardError(.invalidPayload, "the card data could not be encoded as JSON", cause: error)
        }
    }

    /// The validated card number.
    public func pan() throws(CardError) -> PAN { try PAN(accountNumber) }

    /// The validated expiry. A month or year not written as `expirationDate` asks (a two-digit month, `09`; a
    /// four-digit year from 2000 to 2099) is `.malformedExpirationDate`, whose message says how card data gives the
    /// expiry: the card's `MM/YY` form (`.malformedExpiry`) is not what the sender has to write here.
    public func expiry() throws(CardError) -> CardExpiry {
        let month = expirationDate.month
        let year = expirationDate.year
        guard month.utf8.count == 2, month.utf8.allSatisfy({ (48...57).contains($0) }), let m = Int(month),
            year.utf8.count == 4, year.utf8.allSatisfy({ (48...57).contains($0) }), let y = Int(year),
            (2000...2099).contains(y)
        else { throw CardError(rejection: .malformedExpirationDate) }
        return try CardExpiry(month: m, year: y)
    }

    public var description: String {
        let last4 = String(accountNumber.suffix(4))
        let masked = String(repeating: "*", count: max(accountNumber.count - 4, 0)) + last4
        var text = "CardData(accountNumber: \(masked), expirationDate: \(expirationDate.month)/\(expirationDate.year)"
        if cvv2 != nil { text += ", cvv2: ***" }
        if name != nil { text += ", name: present" }
        return text + ")"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: ["summary": description], displayStyle: .struct) }

    private static func path(_ context: DecodingError.Context) -> String {
        "\"" + context.codingPath.map(\.stringValue).joined(separator: ".") + "\""
    }
}
