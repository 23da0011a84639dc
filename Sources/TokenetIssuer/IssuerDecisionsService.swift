import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// What the TSP asks the issuer: eligibility of one of its cards, and a decision on a digitization.
struct IssuerDecisionsService: IssuerV1.IssuerDecisions.ServiceProtocol {
    let store: IssuerStore
    let key: RSAPrivateKey
    /// The issuer's TSP: only that node may ask (`TSPLink.requireOwnTSP`).
    let tsp: TSPLink
    let logger: Logger
    let now: @Sendable () -> Date
    /// Wrong security codes per card, across eligibility checks and digitizations.
    let securityCodes = SecurityCodeAttempts()

    func checkCardEligibility(
        _ request: IssuerV1.CardEligibilityRequest, context: ServerContext
    ) async throws -> IssuerV1.CardEligibilityResponse {
        try tsp.requireOwnTSP(context.peer)
        let card = try decrypt(request.encryptedCardData)
        let pan = try pan(of: card)
        let stored = try store.card(matching: pan)
        let renewed = try store.renewedCard(describedBefore: pan, expiry: try? card.expiry(), current: stored)
        let (eligible, reason) = evaluate(card, stored: stored, renewed: renewed, input: request.inputMethod)
        logger.withTraceID(context.traceID).info(
            "eligibility checked",
            ["card": stored?.id ?? "unknown", "last4": card.last4, "eligible": "\(eligible)", "reason": reason])
        return IssuerV1.CardEligibilityResponse(eligible: eligible, reason: reason)
    }

    /// The issuer's check of presented card data. A card its own app pushed (BANK_APP, which the TSP says only of
    /// push receipts and sessions) is neither counted toward nor held by the lock on wrong codes and expiries:
    /// anyone with a card number could lock it with five guessed expiries, and the cardholder's way back, the
    /// bank app's push, was refused with it.
    func evaluate(_ card: CardData, stored: StoredCard?, renewed: StoredCard?, input: CardV1.InputMethod)
        -> (Bool, String)
    {
        guard input != .bankApp else {
            return IssuerEligibility.evaluate(presented: card, stored: stored, renewed: renewed, asOf: now())
        }
        return IssuerEligibility.evaluate(
            presented: card, stored: stored, renewed: renewed, asOf: now(), attempts: securityCodes)
    }

    func authorizeDigitization(
        _ request: IssuerV1.AuthorizeDigitizationRequest, context: ServerContext
    ) async throws -> IssuerV1.AuthorizeDigitizationResponse {
        try tsp.requireOwnTSP(context.peer)
        // The decision is recorded under the token's id, which the TSP's later calls (OTP, activation, lifecycle)
        // name the token by: one recorded without it could never be found again.
        guard !request.digitalCardID.isEmpty else {
            throw RPCError(.invalidArgument, "digital_card_id is required: the id of the token the TSP is making")
        }
        // Recorded and logged as it came: what is not a PAR (a card number sent in its place, say) stops here.
        guard
            request.paymentAccountReference.isEmpty
                || PaymentAccountReference.isWellFormed(request.paymentAccountReference)
        else {
            throw RPCError(
                .invalidArgument,
                "payment_account_reference must be 29 characters of 0-9 and A-Z (a BIN controller's 4, then 25), or "
                    + "empty")
        }
        let card = try decrypt(request.encryptedCardData)
        let pan = try pan(of: card)
        let stored = try store.card(matching: pan)
        let risk = RiskScores(
            account: Int(request.risk?.accountScore ?? 0), device: Int(request.risk?.deviceScore ?? 0),
            recommendation: request.risk?.recommendation ?? .unspecified)
        let outcome: DigitizationOutcome
        let renewed = try store.renewedCard(describedBefore: pan, expiry: try? card.expiry(), current: stored)
        let (eligible, reason) = evaluate(card, stored: stored, renewed: renewed, input: request.inputMethod)
        if let stored, eligible {
            // A suspension held in this wallet first; then a card typed in (or scanned, or on file) without its code.
            let hold: DigitizationPolicy.ApprovalHold? =
                if request.heldSuspension != nil {
                    .heldSuspension
                } else if card.lacksSecurityCode(enteredBy: request.inputMethod) {
                    .noSecurityCode
                } else {
                    nil
                }
            outcome = DigitizationPolicy.decide(stored.rule, risk: risk, contact: stored.contact, hold: hold)
        } else {
            outcome = .declined(reason: reason)
        }
        try store.record(
            DecisionRecord(
                cardID: stored?.id, last4: card.last4, digitalCardID: request.digitalCardID,
                tokenLast4: request.tokenLast4, walletAccountID: request.walletAccountID,
                inputMethod: Int(request.inputMethod.rawValue), deviceID: request.device?.deviceID ?? "",
                deviceType: request.device?.deviceType ?? "", risk: risk,
                recommendation: Int(request.risk?.recommendation.rawValue ?? 0), rule: stored?.rule.name,
                outcome: outcome, walletNodeID: request.walletNodeID.isEmpty ? nil : request.walletNodeID,
                tokenRequestorID: request.tokenRequestorID, tokenType: Int(request.tokenType.rawValue),
                paymentAccountReference: request.paymentAccountReference),
            at: now())
        let log = logger.withTraceID(context.traceID)
        // Who asks for the token, and where it will live: issuers decide by them, and reading a decision in the log
        // needs them.
        let requestor = Self.shownRequestor(request.tokenRequestorID)
        let tokenType = Self.shownTokenType(Int(request.tokenType.rawValue))
        let shownPAR = request.paymentAccountReference.isEmpty ? "none" : request.paymentAccountReference
        // The TSP asks about a token it is creating, or asks again for one whose digitization it resumed: it knows
        // the token, whatever it answered before.
        if !request.digitalCardID.isEmpty {
            store.noteKnownToTSP([request.digitalCardID], why: "AuthorizeDigitization", log: log)
        }
        // A request that reached the issuer after the TSP's stand-in had decided (a link held up, then healed): the
        // stand-in's decision stands, and a plain "decided APPROVED" contradicted it.
        var late = false
        if !request.digitalCardID.isEmpty {
            late = try store.hasDecision(digitalCardID: request.digitalCardID, rule: Self.standInRule)
        }
        let decided =
            late
            ? "digitization decided after the TSP's stand-in had decided it; the stand-in's decision stands"
            : "digitization decided"
        if case .declined(let reason) = outcome {
            // Why, as the TSP and the wallet are told it.
            log.info(
                decided,
                [
                    "card": stored?.id ?? "unknown", "digital_card_id": request.digitalCardID, "decision": outcome.name,
                    "account_score": "\(risk.account)", "device_score": "\(risk.device)",
                    "token_requestor_id": requestor,
                    "token_type": tokenType, "par": shownPAR, "reason": reason,
                ])
        } else if let held = request.heldSuspension {
            // Why a card whose rule approves was stepped up.
            log.info(
                decided,
                [
                    "card": stored?.id ?? "unknown", "digital_card_id": request.digitalCardID, "decision": outcome.name,
                    "account_score": "\(risk.account)", "device_score": "\(risk.device)",
                    "token_requestor_id": requestor,
                    "token_type": tokenType, "par": shownPAR,
                    "held_suspension": Self.describe(held),
                ])
        } else {
            log.info(
                decided,
                [
                    "card": stored?.id ?? "unknown", "digital_card_id": request.digitalCardID, "decision": outcome.name,
                    "account_score": "\(risk.account)", "device_score": "\(risk.device)",
                    "token_requestor_id": requestor,
                    "token_type": tokenType, "par": shownPAR,
                ])
        }
        var response = Self.response(outcome)
        response.accountID = stored?.accountID ?? ""
        return response
    }

    /// A token requestor id as the log says it: "none" for none given.
    static func shownRequestor(_ id: String) -> String { id.isEmpty ? "none" : id }

    /// A token type as the log says it: its name, or its number when this build does not know it.
    static func shownTokenType(_ raw: Int) -> String {
        let type = CardV1.TokenType(rawValue: Int32(clamping: raw))
        return type.protoValueName ?? String(raw)
    }

    /// A held suspension as the log says it: `token "DN…" suspended by issuer:ID (REASON), deleted by the wallet`.
    static func describe(_ held: IssuerV1.HeldSuspension) -> String {
        let reason = held.reason.isEmpty ? "" : " (\(held.reason))"
        let deleted = held.deleted ? ", deleted by the wallet" : ""
        return "token \"\(held.digitalCardID)\" suspended by \(held.suspendedBy)\(reason)\(deleted)"
    }

    static func response(_ outcome: DigitizationOutcome) -> IssuerV1.AuthorizeDigitizationResponse {
        var response = IssuerV1.AuthorizeDigitizationResponse()
        switch outcome {
        case .approved:
            response.decision = .approved
        case .declined(let reason):
            response.decision = .declined
            response.reason = reason
        case .stepUp(let offers):
            response.decision = .requireAdditionalAuthentication
            response.idvMethods = offers.map { offer in
                CardV1.IdvMethod(
                    id: offer.id, type: offer.type.wire, maskedValue: offer.maskedValue,
                    appIdentifier: offer.appIdentifier, appAction: offer.appAction)
            }
        }
        return response
    }

    /// Opens card data the TSP encrypted to this issuer's key.
    func decrypt(_ encrypted: CardV1.EncryptedCardData?) throws -> CardData {
        guard let encrypted, !encrypted.jwe.isEmpty else {
            throw RPCError(.invalidArgument, "encrypted_card_data is required")
        }
        let card: CardData
        do {
            card = try CardData(json: try JWE.decrypt(encrypted.jwe, with: key))
        } catch let error where error.code == .unknownKeyID {
            throw RPCError(
                .failedPrecondition,
                "the card data is not encrypted to the issuer's registered key (kid \(key.kid)): \(error.message)")
        } catch {
            throw RPCError(.invalidArgument, "the encrypted card data cannot be read: \(error.message)")
        }
        // As `card.proto` says, and as the TSP checks what a wallet sends: a sender whose two disagree has mixed up
        // its keys, and the sandbox says so rather than quietly trusting the JWE's `kid` (which named this key).
        let named = encrypted.publicKeyIdentifier
        guard named.isEmpty || named == key.kid else {
            let shown = String(maskPAN(named).unicodeScalars.prefix(20).map(Character.init)).debugDescription
            throw RPCError(
                .invalidArgument,
                "encrypted_card_data.public_key_identifier \(shown)\(named.unicodeScalars.count > 20 ? "…" : "") is "
                    + "not the key the JWE names (kid \(key.kid)): give the kid of the key the card data is "
                    + "encrypted to, or leave it empty")
        }
        return card
    }

    func pan(of card: CardData) throws -> PAN {
        do {
            return try card.pan()
        } catch {
            throw RPCError(.invalidArgument, "the card data holds no valid card number: \(error.message)")
        }
    }
}

extension CardData {
    var last4: String { String(accountNumber.suffix(4)) }
}

extension IdvMethodSpec.Kind {
    var wire: CardV1.IdvMethodType {
        switch self {
        case .otpSMS: return .otpSms
        case .otpEmail: return .otpEmail
        case .appToApp: return .appToApp
        case .callCenter: return .callCenter
        }
    }
}
