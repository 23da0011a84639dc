import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

extension TSPService {
    /// Digitize in three steps, crash-safe by construction: (1) one transaction consumes the receipt and stores the
    /// request and its INACTIVE token; (2) the issuer is asked, outside any transaction, under a deadline; (3) one
    /// transaction records the decision, the token's event and the answer. A retry after a crash between the steps
    /// finds the pending request and resumes at step 2 with the same token.
    func digitize(_ request: TspV1.DigitizeRequest, traceID: String, walletNodeID: String? = nil, log: Logger)
        async throws
        -> TspV1.DigitizeResponse
    {
        guard !request.requestID.isEmpty else {
            throw TSPError(.invalidArgument, "request_id is required: it makes retries safe")
        }
        // Kept with the token, forwarded to the issuer and shown in listings: an id that holds a card number would
        // put it there in clear.
        if let problem = IdentifierRules.problem(request.requestID) {
            throw TSPError(.invalidArgument, "request_id must be \(problem); choose another (a UUID, say)")
        }
        guard !request.eligibilityReceipt.isEmpty else {
            throw TSPError(.invalidArgument, "eligibility_receipt is required: call CheckEligibility first")
        }
        // Missing, they were refused as "another" account or device, which sent a wallet's developer looking for a
        // mix-up where a field had been left out.
        guard !request.walletAccountID.isEmpty else {
            throw TSPError(
                .invalidArgument, "wallet_account_id is required: the account the eligibility check was made for")
        }
        guard let deviceID = request.device?.deviceID, !deviceID.isEmpty else {
            throw TSPError(
                .invalidArgument, "device.device_id is required: the device the eligibility check was made for")
        }
        if let device = request.device { try Self.checkDevice(device) }
        if let risk = request.risk { try Self.checkRisk(risk) }
        try Self.checkTokenRequestor(request)
        try await expireAbandonedStepUps(traceID: traceID, log: log)
        let start = try store.beginDigitization(
            request, nowMs: nowMs, traceID: traceID, walletNodeID: walletNodeID
        ) { pan, scheme in
            try newToken(for: pan, scheme: scheme)
        }
        let pending: PendingDigitization
        switch start {
        case .completed(var response):
            log.info("digitize retried; answering as before", ["request_id": request.requestID])
            // With the token as it is now: a wallet whose copy of the answer was lost retries after the token may
            // have changed (suspended meanwhile), and it keeps the state it is given. The stored state made it show
            // ACTIVE for good, and drop the CARD_STATE of the change, which came before it knew the token.
            if !response.digitalCardID.isEmpty, let token = try store.token(response.digitalCardID) {
                response.tokenState = token.state.wire
                response.stateVersion = token.stateVersion
            }
            return response
        case .pending(let value):
            pending = value
        }
        let outcome: DigitizationOutcome
        if pending.token.state == .deactivated {
            // Deleted while its digitization waited for a decision (the TSP stopped while asking the issuer, and
            // the token was deleted before the wallet retried): the issuer is not asked, as it would decide on a card
            // for a token that no longer exists, and the wallet is told to add the card again.
            let deletion = try store.events(of: pending.token.digitalCardID).last { $0.toState == .deactivated }
            outcome = .deletedBeforeDecision(by: deletion?.actor ?? "tsp", reason: deletion?.reason ?? "")
            log.info(
                "digitize retried for a token deleted before its decision; declined without asking the issuer",
                ["request_id": request.requestID, "digital_card_id": pending.token.digitalCardID])
        } else if let decided = try await decide(
            pending, request: request, held: try heldSuspension(of: pending, log: log), log: log)
        {
            outcome = decided
        } else {
            // Cancelled (the TSP is stopping and its drain ran out, or the wallet gave up): the issuer's call failed
            // for that reason, not because the issuer is unavailable, so nothing is decided. The request stays
            // pending; a retry with the same request id resumes it.
            log.info("digitize cancelled before a decision; left pending", ["request_id": request.requestID])
            throw TSPError(
                .unavailable, "the digitization was interrupted before a decision; retry it with the same request id")
        }
        let advice = standInAdvice(pending, request: request, outcome: outcome, log: log)
        // In the state-change gate: the tokens this one replaces are deactivated and told in turn with other changes.
        let response = try await stateChanges.run {
            let finished = try store.finishDigitization(
                pending, outcome: outcome, advice: advice, traceID: traceID, nowMs: nowMs)
            await publishReplaced(finished, by: pending.token.digitalCardID, log: log)
            return finished.value.response
        }
        let decision = response.decision.protoValueName ?? ""
        if response.decision == .declined {
            // Why, in the TSP's own log: the wallet and the listings say it, and an operator reading the log alone
            // had only DECLINED.
            log.info(
                "digitized",
                [
                    "digital_card_id": pending.token.digitalCardID, "decision": decision,
                    "decided_by": response.decidedBy, "issuer_id": pending.token.issuerID,
                    "last4": pending.token.panLast4, "decline_reason": response.declineReason,
                ])
        } else {
            log.info(
                "digitized",
                [
                    "digital_card_id": pending.token.digitalCardID, "decision": decision,
                    "decided_by": response.decidedBy, "issuer_id": pending.token.issuerID,
                    "last4": pending.token.panLast4,
                ])
        }
        return response
    }

    private func newToken(for pan: PAN, scheme: CardScheme) throws -> NewToken {
        guard let id = DigitalCardID.generate(for: scheme) else {
            throw TSPError(.internal, "no digital card id format for \(scheme)")
        }
        let tokenPAN = try configuration.tokenPANs.generate(for: pan)
        return NewToken(
            digitalCardID: id, tokenPAN: tokenPAN,
            expiry: TokenExpiry.expiry(issuedAt: now(), years: configuration.tokenValidityYears))
    }

    /// A suspension of the card that stands in the wallet account (`TSPStore.heldSuspension`), logged: the issuer
    /// is told, and the stand-in declines.
    private func heldSuspension(of pending: PendingDigitization, log: Logger) throws -> HeldSuspension? {
        guard
            let held = try store.heldSuspension(
                of: try pending.receipt.card.pan(), walletNodeID: pending.token.walletNodeID,
                walletAccountID: pending.token.walletAccountID, except: pending.token.digitalCardID)
        else { return nil }
        log.info(
            "a suspension of the card stands in this wallet account; the issuer is told",
            [
                "digital_card_id": pending.token.digitalCardID, "suspended_token": held.digitalCardID,
                "suspended_by": held.suspendedBy, "reason": held.reason, "deleted": "\(held.deletedAtMs != nil)",
            ])
        return held
    }

    /// The issuer's decision, or the stand-in's when the issuer fails, is too slow, or answers nothing usable; a
    /// decline when the issuer refuses the question; nil when the call was cancelled before a decision. An issuer
    /// that was given less than its deadline (what the wallet's own deadline left) and did not answer in it is no
    /// slow issuer: nothing is decided, and the wallet is told to retry with time enough (UNAVAILABLE). Deciding by
    /// the stand-in then let a wallet skip the issuer by sending a short deadline, and judged the risk data it sent.
    private func decide(
        _ pending: PendingDigitization, request: TspV1.DigitizeRequest, held: HeldSuspension?, log: Logger
    ) async throws(TSPError) -> DigitizationOutcome? {
        let problem: String
        // What the wallet's decline says of the issuer; its answer's fault is the issuer's to read (the log, the
        // stand-in's advice).
        var issuerOutcome = "the issuer did not answer"
        let options = CallOptions.answeringInTime(atMost: configuration.issuerDeadline)
        do {
            guard let issuerRecord = try store.issuers().first(where: { $0.id == pending.token.issuerID }) else {
                throw TSPError(.internal, "issuer \(pending.token.issuerID) is no longer registered")
            }
            var question = IssuerV1.AuthorizeDigitizationRequest()
            question.encryptedCardData = try encrypt(pending.receipt.card, to: issuerRecord)
            question.maskedPAN = try pending.receipt.card.pan().masked
            question.digitalCardID = pending.token.digitalCardID
            question.tokenLast4 = pending.token.tokenLast4
            question.inputMethod = pending.receipt.inputMethod
            question.device = request.device
            question.risk = request.risk
            question.walletAccountID = pending.token.walletAccountID
            question.walletNodeID = pending.token.walletNodeID ?? ""
            question.heldSuspension = held?.wire
            question.tokenRequestorID = request.tokenRequestorID
            question.tokenType = request.tokenType
            question.paymentAccountReference = pending.token.paymentAccountReference ?? ""
            let answer = try await issuers.decisions(for: issuerRecord).authorizeDigitization(
                question, options: options)
            if let outcome = DigitizationOutcome.issuer(answer) { return outcome }
            if Task.isCancelled { return nil }
            problem = DigitizationOutcome.unusableAnswerProblem(answer)
            issuerOutcome = "the issuer's answer could not be used"
            log.warning(
                "issuer answer unusable; applying the stand-in rule",
                ["issuer_id": pending.token.issuerID, "problem": problem])
        } catch _ where Task.isCancelled {
            return nil
        } catch let error as RPCError where DigitizationOutcome.refusals.contains(error.code) {
            let code = error.code.protoValueName ?? String(error.code.rawValue)
            log.warning(
                "issuer refused the request; declining",
                ["issuer_id": pending.token.issuerID, "code": code, "error": error.message])
            return .issuerRefused(code: code, message: error.message)
        } catch let error as RPCError {
            // Said in words: the reason reaches the wallet, the issuer (STAND_IN_ADVICE) and every listing, where
            // "issuer unavailable: DEADLINE_EXCEEDED" told an operator less than what happened.
            if error.code == .deadlineExceeded, let given = options.timeout, given < configuration.issuerDeadline {
                let needed = configuration.issuerDeadline + .seconds(1)
                log.info(
                    "issuer did not answer within what the wallet's deadline left; nothing decided",
                    ["issuer_id": pending.token.issuerID, "given": DurationText.describe(given)])
                throw TSPError(
                    .unavailable,
                    "the issuer did not answer within the \(DurationText.describe(given)) the wallet's deadline left "
                        + "it; the TSP's stand-in decides only once the issuer has had its "
                        + "\(DurationText.describe(configuration.issuerDeadline)): retry with the same request id and a "
                        + "deadline of more than \(DurationText.describe(needed))")
            }
            problem =
                switch error.code {
                case .deadlineExceeded:
                    "the issuer did not answer within \(DurationText.describe(configuration.issuerDeadline))"
                // The runtime marks the failures of its own side; an UNAVAILABLE without a mark is the issuer's
                // answer (its disk refusing writes, say), which "could not be reached" misdescribed.
                case .unavailable where error.callWasNeverSent || error.unexpectedPeer != nil:
                    "the issuer could not be reached"
                case .unavailable where error.callWasNotProcessed: "the issuer was shutting down"
                case .unavailable where error.connectionEndedHere: "the connection to the issuer was lost"
                case .unavailable: "the issuer answered that it is unavailable"
                default: "the issuer failed with \(error.code.protoValueName ?? String(error.code.rawValue))"
                }
            log.warning(
                "issuer did not decide; applying the stand-in rule",
                ["issuer_id": pending.token.issuerID, "error": error.description])
        } catch {
            problem = "the issuer could not be asked"
            log.warning(
                "issuer did not decide; applying the stand-in rule",
                ["issuer_id": pending.token.issuerID, "error": String(describing: error)])
        }
        // The issuer alone may judge a card whose suspension stands: a stand-in approval would lift it. Nor does the
        // stand-in approve a card typed in without its security code, which the issuer steps up: with the issuer
        // away, a card number and expiry alone (a leaked list) would get a live token.
        let withoutCode = pending.receipt.card.lacksSecurityCode(enteredBy: pending.receipt.inputMethod)
        let standIn =
            held.map { .decline(reason: "\(issuerOutcome) and \($0.summary) (stand-in declined)") }
            ?? (withoutCode
                ? .decline(
                    reason: "\(issuerOutcome) and the card was given without its security code (stand-in declined): "
                        + "add it again with its security code")
                : nil)
            ?? configuration.standIn.decide(risk: request.risk, issuer: issuerOutcome)
        return .standIn(standIn, issuerProblem: problem)
    }
}

extension TSPService {
    /// The wallet's risk scores are 1 (lowest risk) to 5 (highest), or 0 when it has none; a score above 5 went to
    /// the issuer and the stand-in rule as if it meant something, and an undeclared recommendation as a number.
    static func checkRisk(_ risk: CardV1.WalletRiskData) throws {
        for (field, score) in [("account_score", risk.accountScore), ("device_score", risk.deviceScore)] where score > 5
        {
            throw TSPError(
                .invalidArgument, "risk.\(field) \(score) is outside 1 (lowest risk) to 5 (highest); 0 when not known")
        }
        guard risk.recommendation.protoValueName != nil else {
            throw TSPError(
                .invalidArgument,
                "risk.recommendation \(risk.recommendation.rawValue) is not a recommendation: give one of "
                    + CardV1.WalletRecommendation.knownCases.compactMap(\.protoValueName).joined(separator: ", "))
        }
    }

    /// The token requestor's id and token type go to the issuer, which may decide by them: an id that is not a
    /// scheme's (11 digits) or a type the enum does not name would reach it as if it meant something.
    static func checkTokenRequestor(_ request: TspV1.DigitizeRequest) throws {
        let id = request.tokenRequestorID
        if !id.isEmpty, id.utf8.count != 11 || !id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            // Not quoted: whatever was sent in its place (a card number, say) would go into logs and listings.
            throw TSPError(
                .invalidArgument,
                "token_requestor_id is not a token requestor id (\(id.unicodeScalars.count) characters): it takes the "
                    + "11 digits the card's scheme assigned the wallet (40010030273 is Apple Pay's at Visa), or "
                    + "nothing when the wallet has none")
        }
        guard request.tokenType.protoValueName != nil else {
            throw TSPError(
                .invalidArgument,
                "token_type \(request.tokenType.rawValue) is not a token type: give one of "
                    + CardV1.TokenType.knownCases.compactMap(\.protoValueName).joined(separator: ", "))
        }
    }
}
