import TokenetCard
import TokenetWire

/// Checks what the cardholder typed before anything is encrypted: the form of the number, the expiry and the CVC.
///
/// Only malformed input is refused here (INVALID_ARGUMENT). A well-formed number with a wrong check digit, an
/// expired card or an unsupported scheme goes to the TSP, whose eligibility answer names the reason; the wallet
/// does not second-guess it.
public enum ManualCardInput {
    public static func cardData(_ manual: WalletV1.ManualCard) throws(WalletError) -> CardData {
        guard !manual.pan.isEmpty else { throw WalletError(.invalidArgument, "the card number is missing") }
        let pan = try typedNumber(manual.pan)
        switch PAN.rejection(for: pan) {
        case .nonDigitCharacters?, .invalidLength?:
            throw WalletError(.invalidArgument, PAN.rejection(for: pan)!.message)
        default:
            break
        }
        guard manual.inputMethod.protoValueName != nil else {
            throw WalletError(
                .invalidArgument,
                "input_method \(manual.inputMethod.rawValue) is not an input method: give one of "
                    + CardV1.InputMethod.knownCases.compactMap(\.protoValueName).joined(separator: ", "))
        }
        let expiry: CardExpiry
        switch ManualCardForm.expiry(manual.expiry) {
        case .success(let parsed): expiry = parsed
        case .failure(let problem): throw WalletError(.invalidArgument, problem.message)
        }
        for problem in [
            ManualCardForm.securityCodeProblem(manual.cvc), ManualCardForm.cardholderNameProblem(manual.cardholderName),
        ] {
            if let problem { throw WalletError(.invalidArgument, problem) }
        }
        return CardData(
            accountNumber: pan, expirationDate: CardData.ExpirationDate(expiry),
            cvv2: manual.cvc.isEmpty ? nil : manual.cvc,
            name: manual.cardholderName.isEmpty ? nil : manual.cardholderName)
    }

    /// The card number as typed, without the spaces or hyphens a cardholder puts between groups of digits
    /// (`4111 1111 1111 1111`, as printed on the card): a wallet's card form takes them, so the wallet does, and
    /// only the digits travel on. Anything else is refused here, naming what is allowed (`PAN.digits(typed:)`).
    static func typedNumber(_ typed: String) throws(WalletError) -> String {
        guard let digits = PAN.digits(typed: typed) else {
            throw WalletError(.invalidArgument, "the card number may hold only \(PAN.typedForm)")
        }
        guard !digits.isEmpty else { throw WalletError(.invalidArgument, "the card number is missing") }
        return digits
    }
}
