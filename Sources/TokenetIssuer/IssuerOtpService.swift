import Foundation
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.issuer.v1.IssuerOtp`: delivers the one-time codes the TSP generates to the cardholder's phone or
/// e-mail, which only the issuer knows. Delivery is simulated by the outbox; the code is never logged.
struct IssuerOtpService: IssuerV1.IssuerOtp.ServiceProtocol {
    let store: IssuerStore
    /// The issuer's TSP: only that node may have codes sent (`TSPLink.requireOwnTSP`).
    let tsp: TSPLink
    let logger: Logger
    let now: @Sendable () -> Date

    func sendOTP(_ request: IssuerV1.SendOtpRequest, context: ServerContext) async throws -> IssuerV1.SendOtpResponse {
        try tsp.requireOwnTSP(context.peer)
        guard !request.digitalCardID.isEmpty else { throw RPCError(.invalidArgument, "digital_card_id is required") }
        // At most ten: the code goes into the message the cardholder reads and the call centre's outbox, and a card
        // number sent as a code (13 digits or more) came out in clear there.
        guard (4...10).contains(request.code.count), request.code.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw RPCError(.invalidArgument, "code must be four to ten decimal digits")
        }
        guard let card = try store.card(forDigitalCardID: request.digitalCardID) else {
            throw RPCError(
                .notFound, "the issuer made no decision for token \"\(request.digitalCardID)\"; it knows no card for it"
            )
        }
        if let blocked = card.blockedRefusal {
            throw RPCError(.failedPrecondition, "\(blocked): no code is sent for its tokens")
        }
        let channel: String
        let destination: String
        let kind: IdvMethodSpec.Kind
        switch request.type {
        case .otpSms:
            kind = .otpSMS
            channel = "sms"
            destination = Masking.phone(card.contact.phone)
        case .otpEmail:
            guard let masked = Masking.email(card.contact.email) else {
                throw RPCError(.failedPrecondition, "the cardholder of card \(card.id) has no usable e-mail address")
            }
            kind = .otpEmail
            channel = "email"
            destination = masked
        default:
            throw RPCError(.invalidArgument, "type must be IDV_METHOD_TYPE_OTP_SMS or IDV_METHOD_TYPE_OTP_EMAIL")
        }
        // Only by a method the issuer offered for this token, named by its id: a code went by SMS for a method id
        // the issuer never gave, and by e-mail for the id of its SMS method.
        let offered = try store.offeredMethodTypes(forDigitalCardID: request.digitalCardID)
        guard offered.contains(kind) else {
            let named = offered.map { "\(IdvOffer.id(of: $0)) (\($0.rawValue))" }.joined(separator: ", ")
            throw RPCError(
                .failedPrecondition,
                "the issuer offered no \(kind.rawValue) method for token \"\(request.digitalCardID)\"; it offered "
                    + (named.isEmpty ? "none" : named))
        }
        guard request.methodID == IdvOffer.id(of: kind) else {
            throw RPCError(
                .invalidArgument,
                "method_id \(String(maskPAN(request.methodID).prefix(40)).debugDescription) is not the issuer's "
                    + "\(kind.rawValue) method, \"\(IdvOffer.id(of: kind))\"")
        }
        guard request.expiresAtMs != 0 else {
            throw RPCError(
                .invalidArgument,
                "expires_at_ms is required: when the code expires, which the message tells the cardholder")
        }
        let sentAt = now()
        let text =
            "Your code to activate the card ending \(card.pan.last4) in your wallet is \(request.code). "
            + Self.expiry(request.expiresAtMs, from: sentAt) + " Never share it."
        // A call the TSP gave up on (its deadline passed, or the link was cut and the call cancelled) sends nothing:
        // the code would reach the cardholder after the wallet was told it may not. Nothing between here and the
        // outbox suspends, so the answer cannot change after it.
        guard !Task.isCancelled else {
            throw RPCError(.cancelled, "the TSP gave up on this code before the issuer sent it; nothing was sent")
        }
        try store.recordOutbox(
            IssuerV1.OutboxMessage(
                sentAtMs: UInt64(max(0, sentAt.timeIntervalSince1970 * 1000)), channel: channel,
                maskedDestination: destination, text: text, digitalCardID: request.digitalCardID),
            codeExpiresAtMs: request.expiresAtMs)
        let log = logger.withTraceID(context.traceID)
        log.info(
            "one-time code delivered",
            ["digital_card_id": request.digitalCardID, "card": card.id, "channel": channel, "to": destination])
        // The TSP sends a code only for a token it holds.
        store.noteKnownToTSP([request.digitalCardID], why: "SendOtp", log: log)
        return IssuerV1.SendOtpResponse(maskedDestination: destination)
    }

    /// What the message says of the code's expiry. A code already expired is still delivered (a TSP given a code
    /// lifetime of a millisecond tests the refusal of an expired code), and says so: it read "It expires in 1
    /// second".
    static func expiry(_ expiresAtMs: UInt64, from sentAt: Date) -> String {
        guard Double(expiresAtMs) / 1000 > sentAt.timeIntervalSince1970 else {
            return "It had already expired when it was sent."
        }
        return "It expires in \(timeLeft(until: expiresAtMs, from: sentAt))."
    }

    /// How long the code stands, as the message tells the cardholder: "10 minutes", "90 seconds", "45 seconds".
    static func timeLeft(until expiresAtMs: UInt64, from sentAt: Date) -> String {
        // Rounded down, never more than the code lasts (rounded to the nearest minute, 90 s read "2 minutes", and
        // a cardholder who took 100 s found the code expired), but for the tenth of a second a code takes to reach
        // the issuer after the TSP made it: a 10-minute code read "9 minutes".
        let seconds = max(1, Int((Double(expiresAtMs) / 1000 - sentAt.timeIntervalSince1970 + 0.1).rounded(.down)))
        guard seconds >= 120 else { return seconds == 1 ? "1 second" : "\(seconds) seconds" }
        return "\(seconds / 60) minutes"
    }
}

/// `tokenet.issuer.v1.IssuerCallCentre`: the issuer's operators read the outbox and, after verifying a cardholder on
/// the phone, have the TSP activate the token.
struct IssuerCallCentreService: IssuerV1.IssuerCallCentre.ServiceProtocol {
    let store: IssuerStore
    let tsp: TSPLink
    let logger: Logger

    func outbox(_ request: IssuerV1.OutboxRequest, context: ServerContext) async throws -> IssuerV1.OutboxResponse {
        IssuerV1.OutboxResponse(
            messages: try store.outbox(digitalCardID: request.digitalCardID.isEmpty ? nil : request.digitalCardID))
    }

    func activateToken(_ request: IssuerV1.CallCentreActivateRequest, context: ServerContext) async throws
        -> IssuerV1.CallCentreActivateResponse
    {
        guard !request.digitalCardID.isEmpty else { throw RPCError(.invalidArgument, "digital_card_id is required") }
        guard let card = try store.card(forDigitalCardID: request.digitalCardID) else {
            var message = "the issuer made no decision for token \"\(request.digitalCardID)\"; it knows no card for it"
            // The operator at the call centre works from `issuer cards`, whose first column is the issuer's own card
            // id: given in place of the token's, it was answered as an unknown token with nothing more.
            let issuerCard = try store.card(id: request.digitalCardID) != nil
            if issuerCard || request.digitalCardID.lowercased().hasPrefix("card-") {
                let whose =
                    issuerCard
                    ? "one of this issuer's card ids"
                    : "a wallet's card reference or an issuer card id this issuer lacks"
                message +=
                    "; \(request.digitalCardID) is \(whose), not a token: activate-token takes the digital card id "
                    + "(DNITHE… or DWSPMC…) of the card's INACTIVE token, which tokenet issuer cards --json lists "
                    + "under the card"
            }
            throw RPCError(.notFound, message)
        }
        if let blocked = card.blockedRefusal {
            throw RPCError(.failedPrecondition, "\(blocked): its tokens are not activated")
        }
        guard let caller = tsp.caller else {
            throw RPCError(.failedPrecondition, "issuer-node was started without --tsp, so it cannot reach the TSP")
        }
        let operatorID = context.peer?.nodeID ?? "unknown"
        let response: TspV1.ActivateTokenResponse
        do {
            response = try await TspV1.IssuerIdv.Client(caller).activateToken(
                TspV1.ActivateTokenRequest(
                    digitalCardID: request.digitalCardID,
                    reason: "issuer call centre verified the cardholder (operator \(operatorID))"))
        } catch let error as RPCError {
            throw error
        } catch {
            throw RPCError(.unavailable, "cannot reach the TSP: \(error)")
        }
        let log = logger.withTraceID(context.traceID)
        log.info(
            "token activated through the call centre",
            ["digital_card_id": request.digitalCardID, "card": card.id, "changed": "\(response.changed)"])
        store.noteKnownToTSP([request.digitalCardID], why: "ActivateToken", log: log)
        return IssuerV1.CallCentreActivateResponse(tokenState: response.tokenState, changed: response.changed)
    }
}
