/// The fields a cardholder types into a wallet's card form beside the number — expiry, security code, name — and the
/// language the T&C are asked in, checked for their form only.
///
/// The wallet refuses a malformed form (INVALID_ARGUMENT) with these messages, and the CLI checks the same before it
/// asks for a card number or security code on its standard input: a typo in `--exp` is said before the secrets are
/// typed, not after. Each check returns what is wrong, or nil when the field is fine (an empty optional field is).
public enum ManualCardForm {
    /// The longest cardholder name taken, in characters: longer than any embossed name line. Counted in bytes, a name
    /// of 34 Chinese characters was "longer than 100 characters".
    public static let maximumNameLength = 100
    /// And in UTF-8 bytes, four for each character at most, so that characters built of many scalars cannot make a
    /// name of any size.
    static let maximumNameBytes = 4 * maximumNameLength

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
        guard name.count <= maximumNameLength else {
            return "the cardholder name is longer than \(maximumNameLength) characters"
        }
        guard name.utf8.count <= maximumNameBytes else {
            return "the cardholder name takes more than \(maximumNameBytes) bytes (its characters carry many accents "
                + "or marks); give the name as printed on the card"
        }
        // A name goes on the card's record and onto screens: an escape sequence, a line break or a right-to-left
        // override in it would act on whatever shows it, and no name printed on a card holds one.
        guard !name.unicodeScalars.contains(where: isInvisible) else {
            return "the cardholder name holds a control or invisible character (a line break, an escape, a "
                + "right-to-left override…); give the name as printed on the card"
        }
        return nil
    }

    /// C0 and C1 controls, DEL, the line and paragraph separators, and format characters.
    private static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
            || scalar.properties.generalCategory == .format
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
