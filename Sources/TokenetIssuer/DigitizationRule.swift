/// How the issuer answers a digitization of one card.
///
/// In JSON: `{"rule": "approve"}`, `{"rule": "decline", "reason": "…"}`, `{"rule": "step-up", "idv": [...]}` or
/// `{"rule": "by-score", "approveAtMost": 2, "stepUpAtMost": 4, "idv": [...], "declineReason": "…"}`.
public enum DigitizationRule: Sendable, Equatable {
    case approve
    case decline(reason: String)
    /// Always ask for ID&V, offering these methods.
    case stepUp(idv: [IdvMethodSpec])
    /// Approve when both wallet risk scores are at most `approveAtMost`; ask for ID&V when both are at most
    /// `stepUpAtMost`; decline above. Scores run from 1 (lowest risk) to 5.
    case byScore(approveAtMost: Int, stepUpAtMost: Int, idv: [IdvMethodSpec], declineReason: String?)

    /// The `rule` value in JSON.
    public var name: String {
        switch self {
        case .approve: return "approve"
        case .decline: return "decline"
        case .stepUp: return "step-up"
        case .byScore: return "by-score"
        }
    }

    /// A one-line description for operators (`ListCards`).
    public var summary: String {
        switch self {
        case .approve:
            return "approve"
        case .decline(let reason):
            return "decline (\(reason))"
        case .stepUp(let idv):
            return "step-up (\(idv.map(\.type.rawValue).joined(separator: ", ")))"
        case .byScore(let approveAtMost, let stepUpAtMost, let idv, _):
            return "by-score (approve when scores <= \(approveAtMost), step-up "
                + "(\(idv.map(\.type.rawValue).joined(separator: ", "))) when <= \(stepUpAtMost), decline above)"
        }
    }
}

/// One ID&V method a step-up offers. OTP_SMS and OTP_EMAIL go to the cardholder's phone and email (masked when
/// offered); APP_TO_APP needs the issuer app's identifier and action; CALL_CENTER shows the issuer's number.
public struct IdvMethodSpec: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case otpSMS = "OTP_SMS"
        case otpEmail = "OTP_EMAIL"
        case appToApp = "APP_TO_APP"
        case callCenter = "CALL_CENTER"

        /// Names the accepted values: the synthesized decoding said only
        /// `Cannot initialize Kind from invalid String value TELEPATHY`.
        public init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let kind = Kind(rawValue: text) else {
                let accepted = Self.allCases.map(\.rawValue).joined(separator: ", ")
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: decoder.codingPath,
                        debugDescription: "unknown ID&V method \"\(text)\"; the methods are \(accepted)"))
            }
            self = kind
        }
    }

    public var type: Kind
    public var appIdentifier: String?
    public var appAction: String?
    /// The issuer app's name, shown to the cardholder.
    public var appName: String?

    public init(type: Kind, appIdentifier: String? = nil, appAction: String? = nil, appName: String? = nil) {
        self.type = type
        self.appIdentifier = appIdentifier
        self.appAction = appAction
        self.appName = appName
    }
}

extension DigitizationRule: Codable {
    private enum Keys: String, CodingKey {
        case rule, reason, idv, approveAtMost, stepUpAtMost, declineReason
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let rule = try container.decode(String.self, forKey: .rule)
        switch rule {
        case "approve":
            self = .approve
        case "decline":
            self = .decline(reason: try container.decode(String.self, forKey: .reason))
        case "step-up":
            self = .stepUp(idv: try container.decode([IdvMethodSpec].self, forKey: .idv))
        case "by-score":
            // Foundation reports a number that does not fit an Int (2.5, 1e30) as invalid JSON, without its place.
            func integer(_ key: Keys) throws -> Int {
                guard container.contains(key), (try? container.decodeNil(forKey: key)) == false,
                    (try? container.decode(Int.self, forKey: key)) == nil
                else { return try container.decode(Int.self, forKey: key) }
                throw DecodingError.typeMismatch(
                    Int.self, .init(codingPath: container.codingPath + [key], debugDescription: "not an integer"))
            }
            self = .byScore(
                approveAtMost: try integer(.approveAtMost),
                stepUpAtMost: try integer(.stepUpAtMost),
                idv: try container.decode([IdvMethodSpec].self, forKey: .idv),
                declineReason: try container.decodeIfPresent(String.self, forKey: .declineReason)
            )
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .rule, in: container,
                debugDescription: "unknown rule '\(rule)'; expected approve, decline, step-up or by-score")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(name, forKey: .rule)
        switch self {
        case .approve:
            break
        case .decline(let reason):
            try container.encode(reason, forKey: .reason)
        case .stepUp(let idv):
            try container.encode(idv, forKey: .idv)
        case .byScore(let approveAtMost, let stepUpAtMost, let idv, let declineReason):
            try container.encode(approveAtMost, forKey: .approveAtMost)
            try container.encode(stepUpAtMost, forKey: .stepUpAtMost)
            try container.encode(idv, forKey: .idv)
            try container.encodeIfPresent(declineReason, forKey: .declineReason)
        }
    }
}
