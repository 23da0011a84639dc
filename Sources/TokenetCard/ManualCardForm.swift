/// The fields a cardholder types into a wallet's card form beside the number — expiry, security code, name — and the
/// language the T&C are asked in, checked for their form only.
///
/// The wallet refuses a malformed form (INVALID_ARGUMENT) with these messages, and the CLI checks the same before it
/// asks for a card number or security code on its standard input: a typo in `--exp` is said before the secrets are
/// typed, not after. Each check returns what is wrong, or nil when the field is fine (an empty optional field is).
public enum ManualCardForm {
    /// The longest cardholder name taken, in UTF-8 bytes: longer than any embossed name line.
    public static let maximumNameLength = 100

    /// What is wrong with a field, in words for the person who typed it.
    public struct Problem: Error, Sendable, Equatable {
        public let message: String
    }

    /// The expiry printed on the card, `MM/YY`.
    public static func expiry(_ text: String) -> Result<CardExpiry, Problem> {
        do {
            return .success(try CardExpiry(parsing: text))
        } catch {
            return .failure(Problem(message: error.rejection?.message ?? "the expiry date must be written as MM/YY"))
        }
    }

    public static func expiryProblem(_ text: String) -> String? {
        if case .failure(let problem) = expiry(text) { return problem.message }
        return nil
    }

    /// The security code, when given: 3 or 4 digits.
    public static func securityCodeProblem(_ cvc: String) -> String? {
        guard !cvc.isEmpty else { return nil }
        guard (3...4).contains(cvc.utf8.count), cvc.utf8.allSatisfy({ (48...57).contains($0) }) else {
            return "the security code (CVC) must be 3 or 4 digits"
        }
        return nil
    }

    public static func cardholderNameProblem(_ name: String) -> String? {
        name.utf8.count <= maximumNameLength
            ? nil : "the cardholder name is longer than \(maximumNameLength) characters"
    }

    /// The T&C language, when given: a BCP-47 tag (`LanguageTag`); the message quotes a tag of a readable length.
    public static func languageProblem(_ language: String) -> String? {
        guard !language.isEmpty, !LanguageTag.isWellFormed(language) else { return nil }
        let shown =
            language.count <= LanguageTag.maximumLength + 5 ? "'\(language)'" : "of \(language.count) characters"
        return "the language \(shown) is not a BCP-47 language tag; give one such as es or es-ES (T&C the TSP has "
            + "no text for come in English)"
    }
}
