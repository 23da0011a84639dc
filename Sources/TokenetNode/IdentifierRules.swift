import Foundation

/// What an identifier or a short name given by another party or an operator may hold, where it is stored and then
/// shown in full in listings, answers and log lines: no control character (a line break forges a log line), no
/// format character (U+202E turns the rest of a line around, a zero-width space makes two ids look alike), no line
/// or paragraph separator, and no card number, which must never be shown. Identifiers hold no spaces either; names
/// may.
public enum IdentifierRules {
    /// What is wrong with `value`, as a phrase after "must be"; nil when nothing is. `spaces` allows the spaces a
    /// name holds (Unicode space separators, not tabs or line breaks).
    public static func problem(_ value: String, maxLength: Int = 64, spaces: Bool = false) -> String? {
        let fits =
            !value.isEmpty && value.unicodeScalars.count <= maxLength
            && value.unicodeScalars.allSatisfy { scalar in
                switch scalar.properties.generalCategory {
                case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                    return false
                case .spaceSeparator:
                    return spaces
                default:
                    return true
                }
            }
        // A name of spaces alone is no name: wallets showed a blank issuer.
        guard fits, value.unicodeScalars.contains(where: { $0.properties.generalCategory != .spaceSeparator }) else {
            return "1 to \(maxLength) characters without \(spaces ? "" : "spaces, ")control or format characters"
                + (spaces ? ", not spaces alone" : "")
        }
        // Shown in full in every listing, where a card number must never be: refused rather than shown.
        guard !holdsCardNumber(identifier: value) else {
            return "free of card numbers: it is shown in full in listings and logs, where a card number must not be"
        }
        return nil
    }

    /// What is wrong with a reason code (a token change's, a card block's), or nil: required, 1 to 64 of A-Z, 0-9 and
    /// _ (shown to people and kept in the audit trail), and no card number, which the code would carry to every
    /// party in clear.
    public enum ReasonCodeProblem: Sendable, Equatable {
        case missing
        case form
        case cardNumber
    }

    public static func reasonCodeProblem(_ code: String) -> ReasonCodeProblem? {
        guard !code.isEmpty else { return .missing }
        guard code.utf8.count <= 64,
            code.utf8.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) || $0 == 95 })
        else { return .form }
        return holdsCardNumber(identifier: code) ? .cardNumber : nil
    }

    /// A new random identifier, a lowercased UUID, that `holdsCardNumber` does not refuse: the digits of a UUID's hex,
    /// joined by its hyphens, read as a card number now and then, and a party that sent one as a request id would
    /// be refused for it (or, where ids are not checked, have it masked in every log line).
    public static func newID() -> String {
        newID(from: UUID.init)
    }

    /// `newID` with its UUIDs from `source`.
    static func newID(from source: () -> UUID) -> String {
        while true {
            let id = source().uuidString.lowercased()
            if !holdsCardNumber(identifier: id) { return id }
        }
    }

    /// Whether an identifier someone chose holds what reads as a card number: as `maskPAN` finds one, without the
    /// exceptions a log needs for the ids nodes make. Digits after `DNITHE` are looked at like any others (a Visa
    /// token reference id is the TSP's to make, and `DNITHE` and a card number was taken whole), and so are those
    /// inside a hex identifier: a card number written into one is found by the Luhn check, and a chosen id that
    /// happens to pass it (a few in a thousand random hex ids) is refused with a request to choose another.
    public static func holdsCardNumber(identifier value: String) -> Bool {
        let looked = value.replacingOccurrences(of: "DNITHE", with: "dnithe")
        return maskPAN(looked) != looked
    }
}
