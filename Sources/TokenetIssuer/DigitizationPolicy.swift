import Foundation
import TokenetCard
import TokenetWire

/// What the issuer knows about the holder of a card when it offers ID&V methods.
struct CardholderContact: Sendable, Equatable {
    var phone: String
    var email: String
    var callCenterNumber: String?
}

/// One ID&V method as offered to the TSP: what the cardholder sees, masked.
struct IdvOffer: Sendable, Equatable {
    var id: String
    var type: IdvMethodSpec.Kind
    var maskedValue: String
    var appIdentifier: String = ""
    var appAction: String = ""

    /// The id the issuer gives the method of each type: one method a type, so the id names it for good (SendOtp
    /// checks the method the TSP names by it).
    static func id(of type: IdvMethodSpec.Kind) -> String {
        switch type {
        case .otpSMS: "otp-sms"
        case .otpEmail: "otp-email"
        case .appToApp: "app-to-app"
        case .callCenter: "call-center"
        }
    }
}

/// The issuer's answer to one digitization.
enum DigitizationOutcome: Sendable, Equatable {
    case approved
    case declined(reason: String)
    case stepUp([IdvOffer])

    var name: String {
        switch self {
        case .approved: return "APPROVED"
        case .declined: return "DECLINED"
        case .stepUp: return "REQUIRE_ADDITIONAL_AUTHENTICATION"
        }
    }
}

/// The wallet's risk scores, 1 (lowest risk) to 5; 0 means the TSP sent none. With them, the wallet's
/// recommendation.
struct RiskScores: Sendable, Equatable {
    var account: Int
    var device: Int
    var recommendation: CardV1.WalletRecommendation = .unspecified
}

/// The pure decision rules: a card's rule and the wallet's scores in, the issuer's answer out.
enum DigitizationPolicy {
    static let defaultScoreDeclineReason = "the wallet's risk scores are too high for this card"

    static let recommendedDeclineReason = "the wallet provider recommended declining this digitization"

    static let heldSuspensionDeclineReason =
        "a suspension of this card stands in this wallet and the issuer has no way to verify the cardholder"

    static let noSecurityCodeDeclineReason =
        "the card was given without its security code and the issuer has no way to verify the cardholder"

    /// Why an approval is not given outright: the cardholder proves themselves first.
    enum ApprovalHold: Sendable, Equatable {
        /// A token of the card in the same wallet account suspended by the issuer or the TSP, still or when the
        /// wallet deleted it: an approval let whoever holds the device lift the suspension by deleting the card and
        /// adding it again.
        case heldSuspension
        /// The card came without its security code, other than pushed by the issuer's own app: an approval gave
        /// whoever holds a card number and expiry (a leaked list, with no codes) a live token.
        case noSecurityCode

        var declineReason: String {
            switch self {
            case .heldSuspension: DigitizationPolicy.heldSuspensionDeclineReason
            case .noSecurityCode: DigitizationPolicy.noSecurityCodeDeclineReason
            }
        }
    }

    /// The rule's answer; with a `hold`, an approval becomes a step-up: the cardholder proves themselves before the
    /// card lives in that wallet. The rule's own methods are offered when it has some, else a code to the
    /// cardholder's phone and e-mail; with neither, the card is declined.
    static func decide(
        _ rule: DigitizationRule, risk: RiskScores, contact: CardholderContact, hold: ApprovalHold? = nil
    ) -> DigitizationOutcome {
        let outcome = decide(rule, risk: risk, contact: contact)
        guard let hold, outcome == .approved else { return outcome }
        var methods: [IdvMethodSpec]
        switch rule {
        case .stepUp(let idv), .byScore(_, _, let idv, _): methods = idv
        case .approve, .decline: methods = []
        }
        if methods.isEmpty {
            if !contact.phone.isEmpty { methods.append(IdvMethodSpec(type: .otpSMS)) }
            if !contact.email.isEmpty { methods.append(IdvMethodSpec(type: .otpEmail)) }
        }
        guard !methods.isEmpty else { return .declined(reason: hold.declineReason) }
        return .stepUp(offers(methods, contact: contact))
    }

    private static func decide(
        _ rule: DigitizationRule, risk: RiskScores, contact: CardholderContact
    ) -> DigitizationOutcome {
        switch rule {
        case .approve:
            return .approved
        case .decline(let reason):
            return .declined(reason: reason)
        case .stepUp(let idv):
            return .stepUp(offers(idv, contact: contact))
        case .byScore(let approveAtMost, let stepUpAtMost, let idv, let declineReason):
            // Missing scores (0) are unknown risk: never approved without ID&V, but not declined either.
            let worst =
                (1...5).contains(risk.account) && (1...5).contains(risk.device)
                ? max(risk.account, risk.device) : nil
            // The wallet's recommendation weighs too, as issuers weigh it: a decline is a decline, and a request
            // for authentication is never approved outright. (A rule of its own, approve or decline, stands.)
            if risk.recommendation == .decline { return .declined(reason: recommendedDeclineReason) }
            guard let worst else { return .stepUp(offers(idv, contact: contact)) }
            if worst <= approveAtMost {
                return risk.recommendation == .requireAuthentication
                    ? .stepUp(offers(idv, contact: contact)) : .approved
            }
            if worst <= stepUpAtMost { return .stepUp(offers(idv, contact: contact)) }
            return .declined(reason: declineReason ?? defaultScoreDeclineReason)
        }
    }

    /// The methods with their destinations masked; ids are stable per method type.
    static func offers(_ methods: [IdvMethodSpec], contact: CardholderContact) -> [IdvOffer] {
        methods.map { method in
            switch method.type {
            case .otpSMS:
                return IdvOffer(id: IdvOffer.id(of: .otpSMS), type: .otpSMS, maskedValue: Masking.phone(contact.phone))
            case .otpEmail:
                return IdvOffer(
                    id: IdvOffer.id(of: .otpEmail), type: .otpEmail, maskedValue: Masking.email(contact.email) ?? "")
            case .appToApp:
                return IdvOffer(
                    id: IdvOffer.id(of: .appToApp), type: .appToApp,
                    maskedValue: method.appName ?? method.appIdentifier ?? "",
                    appIdentifier: method.appIdentifier ?? "", appAction: method.appAction ?? "")
            case .callCenter:
                return IdvOffer(
                    id: IdvOffer.id(of: .callCenter), type: .callCenter, maskedValue: contact.callCenterNumber ?? "")
            }
        }
    }
}
