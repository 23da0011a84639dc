import Foundation
import TokenetCard
import TokenetWire

/// The wallets allowed to open the issuer app for in-app activation, by the identity the platform gives the app:
/// the calling package on Android, the pass type identifier on Apple Pay.
public enum AppToAppCaller: String, Sendable, CaseIterable {
    case googlePay = "com.google.android.gms"
    case samsungPay = "com.samsung.android.spay"
    case applePay = "paymentpass.com.apple"

    /// Visa's token requestor id of the wallet, which Visa activation data carries; nil for Apple Pay, which
    /// opens the app with a pass instead.
    public var tokenRequestorID: String? {
        switch self {
        case .googlePay: "40010075001"
        case .samsungPay: "40010043095"
        case .applePay: nil
        }
    }

    public var displayName: String {
        switch self {
        case .googlePay: "Google Pay"
        case .samsungPay: "Samsung Pay"
        case .applePay: "Apple Pay"
        }
    }
}

/// What the wallet's activation data names: a token with the card's last four digits (Android wallets), or a pass
/// the app must look up in the wallet (Apple Pay).
public enum ActivationReference: Sendable, Equatable {
    /// `scheme` is the shape of the data: Visa's tokenReferenceID or Mastercard's tokenUniqueReference.
    case token(digitalCardID: String, panLast4: String, scheme: CardScheme)
    case pass(serialNumber: String)
}

/// A request to open the issuer app, checked.
public struct AppToAppRequest: Sendable, Equatable {
    public var caller: AppToAppCaller
    public var reference: ActivationReference
}

/// Why the issuer app refuses to open: each with a reason a person can act on.
public enum ActivationDataRejection: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownCaller(String)
    case missingActivationData(AppToAppCaller)
    case unexpectedActivationData
    case missingSerialNumber
    case badBase64
    case badJSON
    case notAnObject
    case unknownShape
    case twoShapes
    case missingField(String)
    case malformedField(String, String)
    case foreignTokenRequestor(String, AppToAppCaller)

    /// True for a caller the app does not know (PERMISSION_DENIED); every other rejection, a missing caller among
    /// them, is malformed input.
    public var isUnknownCaller: Bool {
        if case .unknownCaller(let caller) = self { return !caller.isEmpty }
        return false
    }

    public var description: String {
        switch self {
        case .unknownCaller(let caller):
            let known = AppToAppCaller.allCases.map(\.rawValue).joined(separator: ", ")
            return caller.isEmpty
                ? "the caller is required (one of: \(known))"
                : "the issuer app does not accept activation from \"\(caller)\" (known callers: \(known))"
        case .missingActivationData(let caller):
            return "\(caller.displayName) must send activation_data: base64 of the activation JSON"
        case .unexpectedActivationData:
            return "Apple Pay opens the app with a pass serial_number, not with activation_data"
        case .missingSerialNumber:
            return "Apple Pay must send the pass's serial_number"
        case .badBase64:
            return "activation_data is not valid base64"
        case .badJSON:
            return "activation_data does not hold valid JSON"
        case .notAnObject:
            return "activation_data must hold a JSON object"
        case .unknownShape:
            return "activation_data names no token: it needs tokenReferenceID (Visa) or tokenUniqueReference "
                + "(Mastercard)"
        case .twoShapes:
            return "activation_data names a token twice, by tokenReferenceID (Visa) and by tokenUniqueReference "
                + "(Mastercard): send the one of the card's scheme"
        case .missingField(let field):
            return "activation_data is missing \(field)"
        case .malformedField(let field, let why):
            return "activation_data field \(field) \(why)"
        case .foreignTokenRequestor(let id, let caller):
            return "tokenRequestorID \(id) is not \(caller.displayName)'s (\(caller.tokenRequestorID ?? "none"))"
        }
    }
}

extension AppToAppRequest {
    /// Checks who opened the app and what it sent. Android wallets send base64 (standard or URL-safe alphabet,
    /// padding optional) of a JSON object: Visa `{"tokenReferenceID", "panLast4", "tokenRequestorID"}` whose
    /// requestor must be the caller's, or Mastercard `{"tokenUniqueReference", "accountPanSuffix"}`; unknown extra
    /// keys are ignored, as an app must for data it does not own. Apple Pay sends only a pass serial number.
    public static func parse(
        caller: String, activationData: String, serialNumber: String
    ) -> Result<AppToAppRequest, ActivationDataRejection> {
        guard let known = AppToAppCaller(rawValue: caller) else { return .failure(.unknownCaller(caller)) }
        if known == .applePay {
            guard activationData.isEmpty else { return .failure(.unexpectedActivationData) }
            let serial = serialNumber.trimmingCharacters(in: .whitespaces)
            guard !serial.isEmpty else { return .failure(.missingSerialNumber) }
            return .success(AppToAppRequest(caller: known, reference: .pass(serialNumber: serial)))
        }
        guard !activationData.isEmpty else { return .failure(.missingActivationData(known)) }
        guard let bytes = decodeBase64(activationData) else { return .failure(.badBase64) }
        guard let json = try? JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed]) else {
            return .failure(.badJSON)
        }
        guard let object = json as? [String: Any] else { return .failure(.notAnObject) }
        return tokenReference(object, caller: known).map { AppToAppRequest(caller: known, reference: $0) }
    }

    private static func tokenReference(
        _ object: [String: Any], caller: AppToAppCaller
    ) -> Result<ActivationReference, ActivationDataRejection> {
        do throws(ActivationDataRejection) {
            // Both: which token was meant cannot be told, and the app would have opened whichever it read first.
            if object["tokenReferenceID"] != nil && object["tokenUniqueReference"] != nil { throw .twoShapes }
            if object["tokenReferenceID"] != nil {
                let id = try identifier(object, "tokenReferenceID")
                let last4 = try lastFour(object, "panLast4")
                let requestor = try digits(object, "tokenRequestorID")
                guard requestor == caller.tokenRequestorID else {
                    throw .foreignTokenRequestor(requestor, caller)
                }
                return .success(.token(digitalCardID: id, panLast4: last4, scheme: .visa))
            }
            if object["tokenUniqueReference"] != nil {
                let id = try identifier(object, "tokenUniqueReference")
                let last4 = try lastFour(object, "accountPanSuffix")
                return .success(.token(digitalCardID: id, panLast4: last4, scheme: .mastercard))
            }
            throw .unknownShape
        } catch {
            return .failure(error)
        }
    }

    private static func string(_ object: [String: Any], _ field: String) throws(ActivationDataRejection) -> String {
        guard let value = object[field], !(value is NSNull) else { throw .missingField(field) }
        guard let text = value as? String else { throw .malformedField(field, "must be a string") }
        guard !text.isEmpty else { throw .missingField(field) }
        return text
    }

    private static func identifier(_ object: [String: Any], _ field: String) throws(ActivationDataRejection)
        -> String
    {
        let text = try string(object, field)
        guard text.count <= 64, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw .malformedField(field, "must be up to 64 letters, digits or dashes")
        }
        return text
    }

    private static func lastFour(_ object: [String: Any], _ field: String) throws(ActivationDataRejection)
        -> String
    {
        let text = try string(object, field)
        guard text.count == 4, text.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw .malformedField(field, "must be the card's last four digits")
        }
        return text
    }

    private static func digits(_ object: [String: Any], _ field: String) throws(ActivationDataRejection) -> String {
        let text = try string(object, field)
        guard text.allSatisfy({ $0.isASCII && $0.isNumber }) else { throw .malformedField(field, "must be digits") }
        return text
    }

    /// Base64 in either alphabet, padding optional; nil for anything else, a `=` anywhere but at the end included
    /// (`Data(base64Encoded:)` skips it wherever it stands, and read "Zm9v==" as "foo").
    static func decodeBase64(_ text: String) -> Data? {
        ProtoJSONBase64.decode(text)
    }
}
