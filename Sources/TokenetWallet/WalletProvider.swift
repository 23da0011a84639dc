import Foundation
import TokenetCard
import TokenetWire

/// Which wallet this is: it decides the identity the wallet opens the issuer app with and the shape of the
/// activation data (`wallet.json` "provider").
public enum WalletProvider: String, Sendable, CaseIterable {
    case googlePay = "google-pay"
    case samsungPay = "samsung-pay"
    case applePay = "apple-pay"

    /// The calling package on Android; the pass type identifier on Apple Pay.
    public var caller: String {
        switch self {
        case .googlePay: "com.google.android.gms"
        case .samsungPay: "com.samsung.android.spay"
        case .applePay: "paymentpass.com.apple"
        }
    }

    /// Visa's token requestor id of the wallet, for the activation data of the Android wallets (Apple Pay opens the
    /// issuer app with a pass instead).
    public var visaTokenRequestorID: String? {
        self == .applePay ? nil : tokenRequestorID(for: .visa)
    }

    /// The id the card's scheme gave the wallet as a token requestor, as each scheme publishes it; empty for a scheme
    /// the wallet has none for. The TSP passes it to the issuer with the digitization.
    public func tokenRequestorID(for scheme: CardV1.CardScheme) -> String {
        switch (self, scheme) {
        case (.applePay, .visa): "40010030273"
        case (.applePay, .mastercard): "50110030273"
        case (.googlePay, .visa): "40010075001"
        case (.googlePay, .mastercard): "50120834693"
        case (.samsungPay, .visa): "40010043095"
        case (.samsungPay, .mastercard): "50139059239"
        default: ""
        }
    }

    /// Where the wallet keeps its tokens: Apple Pay in the device's secure element, the Android wallets in the app
    /// (host card emulation).
    public var tokenType: CardV1.TokenType {
        self == .applePay ? .secureElement : .hce
    }
}

/// What the wallet hands the issuer app when the cardholder opens it to activate a card. Pure, so every shape is
/// testable.
public struct IssuerAppOpening: Sendable, Equatable {
    public var caller: String
    /// Android wallets: base64 of the activation JSON (keys sorted).
    public var activationData = ""
    /// Apple Pay: the pass's serial number.
    public var serialNumber = ""

    public static func make(
        provider: WalletProvider, scheme: CardV1.CardScheme, digitalCardID: String, panLast4: String
    ) -> IssuerAppOpening {
        var opening = IssuerAppOpening(caller: provider.caller)
        switch provider {
        case .applePay:
            opening.serialNumber = WalletPass.serialNumber(of: digitalCardID)
        case .googlePay, .samsungPay:
            let object: [String: String] =
                scheme == .mastercard
                ? ["tokenUniqueReference": digitalCardID, "accountPanSuffix": panLast4]
                : [
                    "tokenReferenceID": digitalCardID, "panLast4": panLast4,
                    "tokenRequestorID": provider.visaTokenRequestorID ?? "",
                ]
            let json = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            opening.activationData = json.base64EncodedString()
        }
        return opening
    }
}

/// The wallet's pass for a digital card, as Apple Pay would show it to the issuer app.
public enum WalletPass {
    /// The pass's serial number: derived from the digital card id (SHA-256, first 16 bytes as hex), so it is stable
    /// across restarts and needs no storage, and says nothing about the card number.
    public static func serialNumber(of digitalCardID: String) -> String {
        let digest = (try? SHA256.hash(Array("tokenet-pass-v1:\(digitalCardID)".utf8))) ?? []
        return digest.prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}
