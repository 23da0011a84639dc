import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// What a digitization decision does to the new token: a pure mapping from the issuer's (or stand-in's) answer to
/// the token's next state and the event recorded for it.
struct DigitizationOutcome: Sendable, Equatable {
    var decision: CardV1.ProvisioningDecision
    var state: TokenLifecycleStateMachine.State
    var reason: String
    var idvMethods: [CardV1.IdvMethod]
    var declineReason: String
    var decidedBy: String
    /// The issuer's account of the card, when the issuer named it.
    var accountID: String? = nil

    static func issuer(_ response: IssuerV1.AuthorizeDigitizationResponse) -> DigitizationOutcome? {
        var outcome = decision(response)
        if !response.accountID.isEmpty { outcome?.accountID = response.accountID }
        return outcome
    }

    private static func decision(_ response: IssuerV1.AuthorizeDigitizationResponse) -> DigitizationOutcome? {
        switch response.decision {
        case .approved:
            return DigitizationOutcome(
                decision: .approved, state: .active, reason: "issuer approved", idvMethods: [], declineReason: "",
                decidedBy: "issuer")
        case .declined:
            // The issuer's words go to the wallet, the history and the logs: a card number in them is masked, as in
            // every text a party sends outside encrypted card data, and cut to a length a screen shows.
            let why =
                response.reason.isEmpty
                ? "the issuer declined the card for this wallet" : TSPService.peerText(response.reason)
            return DigitizationOutcome(
                decision: .declined, state: .deactivated, reason: "issuer declined: \(why)", idvMethods: [],
                declineReason: why, decidedBy: "issuer")
        case .requireAdditionalAuthentication:
            // A step-up with no method would leave the token INACTIVE with nothing the wallet could do: the answer
            // is as unusable as none, and the stand-in decides. So is one whose methods the cardholder could not
            // choose between (`usableMethods`).
            guard let methods = usableMethods(response.idvMethods) else { return nil }
            return DigitizationOutcome(
                decision: .requireAdditionalAuthentication, state: .inactive,
                reason: "issuer requires additional authentication", idvMethods: methods,
                declineReason: "", decidedBy: "issuer")
        default:
            return nil
        }
    }

    /// The method types the wallet can select (`IdvService.selectIdvMethod`): not UNSPECIFIED, nor one from a newer
    /// protocol this TSP does not know.
    static let selectableTypes: [CardV1.IdvMethodType] = [.otpSms, .otpEmail, .appToApp, .callCenter]

    /// The methods of a step-up, their destinations' card numbers masked; nil when there is none, or when one has no
    /// id or a type it cannot select, or shares its id with another: the wallet selects a method by its id, so such a method could not
    /// be chosen (two methods named "x" sent the code by the second whichever the cardholder meant).
    static func usableMethods(_ methods: [CardV1.IdvMethod]) -> [CardV1.IdvMethod]? {
        guard !methods.isEmpty,
            methods.allSatisfy({ !$0.id.isEmpty && Self.selectableTypes.contains($0.type) }),
            Set(methods.map(\.id)).count == methods.count
        else { return nil }
        return methods.map { method in
            var method = method
            method.maskedValue = maskPAN(method.maskedValue)
            return method
        }
    }

    /// What is wrong with an answer `issuer(_:)` could not use, for the issuer's developers (the TSP's log and the
    /// stand-in's advice): which method of a step-up cannot be selected and why, or the decision it lacks.
    static func unusableAnswerProblem(_ answer: IssuerV1.AuthorizeDigitizationResponse) -> String {
        guard answer.decision == .requireAdditionalAuthentication else {
            let name = answer.decision.protoValueName ?? "\(answer.decision.rawValue), not a decision of this protocol"
            return "the issuer answered without a decision (decision \(name))"
        }
        let methods = answer.idvMethods
        guard !methods.isEmpty else { return "the issuer asked for a step-up and offered no ID&V method" }
        var firstWithID: [String: Int] = [:]
        for (index, method) in methods.enumerated() {
            let number = index + 1
            guard !method.id.isEmpty else {
                return "the issuer asked for a step-up, and its ID&V method \(number) has no id (the wallet selects a "
                    + "method by its id)"
            }
            if let first = firstWithID[method.id] {
                return "the issuer asked for a step-up, and its ID&V methods \(first) and \(number) share the id "
                    + "\(TSPService.peerText(method.id).debugDescription) (the wallet selects a method by its id)"
            }
            firstWithID[method.id] = number
            guard selectableTypes.contains(method.type) else {
                let type = method.type.protoValueName ?? "\(method.type.rawValue)"
                return "the issuer asked for a step-up, and its ID&V method \(number) has the type \(type), which no "
                    + "wallet can select (IDV_METHOD_TYPE_OTP_SMS, _OTP_EMAIL, _APP_TO_APP or _CALL_CENTER)"
            }
        }
        return "the issuer asked for a step-up and offered no usable ID&V method"
    }

    /// The issuer answered the question with an error that refuses it (the request was wrong for it, the card is
    /// not its own, it may not be asked): it was reached, so the stand-in, which stands in for an issuer that cannot
    /// be reached or is too slow, does not decide. The card is declined with the issuer's words.
    static func issuerRefused(code: String, message: String) -> DigitizationOutcome {
        let why = "the issuer refused the request (\(code)): \(TSPService.peerText(message))"
        return DigitizationOutcome(
            decision: .declined, state: .deactivated, reason: why, idvMethods: [], declineReason: why,
            decidedBy: "tsp")
    }

    /// The card became live in the same wallet account on the same device while this digitization was decided (two
    /// cards added before either was digitized): the TSP declines the second, as eligibility would have.
    static func alreadyProvisioned(panLast4: String) -> DigitizationOutcome {
        let why = "this card ending in \(panLast4) is already in this wallet on this device"
        return DigitizationOutcome(
            decision: .declined, state: .deactivated, reason: "declined: \(why)", idvMethods: [], declineReason: why,
            decidedBy: "tsp")
    }

    /// A digitization left pending longer than `window` (the TSP stopped while asking the issuer and the wallet
    /// never retried): the TSP ends it, declined, so its token does not linger and the card can be added again.
    static func expired(window: String) -> DigitizationOutcome {
        let why = "no decision was recorded within \(window) (the digitization was interrupted); add the card again"
        return DigitizationOutcome(
            decision: .declined, state: .deactivated, reason: "digitization expired: \(why)", idvMethods: [],
            declineReason: why, decidedBy: "tsp")
    }

    /// The token was deleted (by `actor`, for `reason`) while its digitization waited for a decision: the TSP
    /// declines it, without asking the issuer, or, when the issuer's decision (`decided`) came after the delete, in
    /// spite of it: a deleted token stays deleted.
    static func deletedBeforeDecision(
        by actor: String, reason: String, decided: CardV1.ProvisioningDecision? = nil
    ) -> DigitizationOutcome {
        // Named by its party alone: the history names it with its id (`TokenActor`), and "deleted by the
        // issuer:bank-a" read as garbled.
        let party = actor.split(separator: ":", maxSplits: 1).first.map(String.init) ?? actor
        let why =
            "the token was deleted by the \(party == "tsp" || party == "operator" ? "TSP" : party)"
            + (reason.isEmpty ? "" : " (\(reason))") + " before its digitization was decided; add the card again"
        let late = decided.map { decision in
            switch decision {
            case .approved: " (the decision that came after it: approved)"
            case .declined: " (the decision that came after it: declined)"
            case .requireAdditionalAuthentication: " (the decision that came after it: a step-up)"
            default: ""
            }
        }
        return DigitizationOutcome(
            decision: .declined, state: .deactivated, reason: "declined: \(why)\(late ?? "")", idvMethods: [],
            declineReason: why, decidedBy: "tsp")
    }

    /// Error codes with which an issuer refuses a question rather than failing to answer it.
    static let refusals: Set<StatusCode> = [
        .invalidArgument, .notFound, .permissionDenied, .failedPrecondition, .unimplemented, .unauthenticated,
        .outOfRange, .alreadyExists,
    ]

    /// The `decided_by` of a decision the stand-in rule made.
    static let standInDecider = "stand-in"

    /// Whether the stand-in rule made this decision, which the issuer is then told of (STAND_IN_ADVICE).
    var isStandIn: Bool { decidedBy == Self.standInDecider }

    static func standIn(_ decision: StandInPolicy.Decision, issuerProblem: String) -> DigitizationOutcome {
        switch decision {
        case .approve:
            return DigitizationOutcome(
                decision: .approved, state: .active, reason: "stand-in approved (\(issuerProblem))", idvMethods: [],
                declineReason: "", decidedBy: standInDecider)
        case .decline(let why):
            return DigitizationOutcome(
                decision: .declined, state: .deactivated, reason: "stand-in declined (\(issuerProblem)): \(why)",
                idvMethods: [], declineReason: why, decidedBy: standInDecider)
        }
    }
}

extension TokenLifecycleStateMachine.State {
    var wire: CardV1.TokenState {
        switch self {
        case .inactive: .inactive
        case .active: .active
        case .suspended: .suspended
        case .deactivated: .deactivated
        }
    }
}
