import Foundation
import Synchronization
import TokenetCard
import TokenetRPC
import TokenetWire

/// An issuer whose answers a test sets: it decrypts what the TSP sends with its own key and records what it saw.
final class FakeIssuer: IssuerV1.IssuerDecisions.ServiceProtocol {
    enum Decision: Sendable {
        case approve
        case decline(String)
        case stepUp
        /// Step-up offering SMS, e-mail and call-centre methods.
        case stepUpAll
        /// Answers only after far longer than any test deadline.
        case slow
        /// Answers with `decision` once `release()` is called: a decision that arrives after other changes.
        indirect case held(Decision)
        case unavailable
        /// Answers with an error that refuses the question (the card data is not for this issuer).
        case refuse
        /// Refuses both questions with NOT_FOUND and these words.
        case refuseWith(String)
        /// Answers with no decision at all.
        case unspecified
        /// Asks for a step-up and offers no method.
        case stepUpWithoutMethods
        /// Asks for a step-up offering these methods.
        case stepUpWith([CardV1.IdvMethod])
    }

    struct State {
        var decision: Decision = .approve
        var eligible = true
        var eligibilityReason = ""
        var slowEligibility = false
        var decryptedLast4: [String] = []
        var maskedPANs: [String] = []
        /// The wallet node each AuthorizeDigitization named.
        var walletNodeIDs: [String] = []
        /// The token requestor and token type each AuthorizeDigitization named.
        var tokenRequestors: [(id: String, type: CardV1.TokenType)] = []
        /// The Payment Account Reference each AuthorizeDigitization named.
        var paymentAccountReferences: [String] = []
        /// The held suspension each AuthorizeDigitization told of (nil for none).
        var heldSuspensions: [IssuerV1.HeldSuspension?] = []
        /// The time left in each call's deadline as it started (eligibility and decisions).
        var timeGiven: [Duration] = []
        var authorizations = 0
        /// The account named in each decision; empty to name none.
        var accountID = "acct-1"
        /// Whether a `.held` decision may be answered.
        var released = false
    }

    /// Lets a `.held` decision be answered.
    func release() { state.withLock { $0.released = true } }

    static let key = try! RSAPrivateKey.generate()
    let state = Mutex(State())

    func set(_ decision: Decision) { state.withLock { $0.decision = decision } }
    func set(accountID: String) { state.withLock { $0.accountID = accountID } }

    private func decrypt(_ data: CardV1.EncryptedCardData?) throws -> CardData {
        guard let data else { throw RPCError(.invalidArgument, "no card data") }
        let card = try CardData(json: try JWE.decrypt(data.jwe, with: Self.key))
        state.withLock { $0.decryptedLast4.append(String(card.accountNumber.suffix(4))) }
        return card
    }

    func checkCardEligibility(_ request: IssuerV1.CardEligibilityRequest, context: ServerContext) async throws
        -> IssuerV1.CardEligibilityResponse
    {
        _ = try decrypt(request.encryptedCardData)
        if let deadline = context.deadline { state.withLock { $0.timeGiven.append(deadline - .now) } }
        switch state.withLock({ $0.decision }) {
        case .refuse: throw RPCError(.invalidArgument, "card data is not encrypted to the issuer's registered key")
        case .refuseWith(let message): throw RPCError(.notFound, message)
        default: break
        }
        let (eligible, reason, slow) = state.withLock { ($0.eligible, $0.eligibilityReason, $0.slowEligibility) }
        if slow { try await Task.sleep(for: .seconds(60)) }
        return IssuerV1.CardEligibilityResponse(eligible: eligible, reason: reason)
    }

    func authorizeDigitization(_ request: IssuerV1.AuthorizeDigitizationRequest, context: ServerContext) async throws
        -> IssuerV1.AuthorizeDigitizationResponse
    {
        _ = try decrypt(request.encryptedCardData)
        if let deadline = context.deadline { state.withLock { $0.timeGiven.append(deadline - .now) } }
        let (decision, accountID) = state.withLock {
            $0.maskedPANs.append(request.maskedPAN)
            $0.walletNodeIDs.append(request.walletNodeID)
            $0.tokenRequestors.append((request.tokenRequestorID, request.tokenType))
            $0.paymentAccountReferences.append(request.paymentAccountReference)
            $0.heldSuspensions.append(request.heldSuspension)
            $0.authorizations += 1
            return ($0.decision, $0.accountID)
        }
        var response = try await answer(decision)
        response.accountID = accountID
        return response
    }

    private func answer(_ decision: Decision) async throws -> IssuerV1.AuthorizeDigitizationResponse {
        switch decision {
        case .approve:
            return IssuerV1.AuthorizeDigitizationResponse(decision: .approved)
        case .decline(let reason):
            return IssuerV1.AuthorizeDigitizationResponse(decision: .declined, reason: reason)
        case .stepUp:
            return IssuerV1.AuthorizeDigitizationResponse(
                decision: .requireAdditionalAuthentication,
                idvMethods: [
                    CardV1.IdvMethod(id: "sms-1", type: .otpSms, maskedValue: "***-***-1234"),
                    CardV1.IdvMethod(id: "app-1", type: .appToApp, maskedValue: "Bank A", appIdentifier: "bank.a"),
                ])
        case .stepUpAll:
            return IssuerV1.AuthorizeDigitizationResponse(
                decision: .requireAdditionalAuthentication,
                idvMethods: [
                    CardV1.IdvMethod(id: "otp-sms", type: .otpSms, maskedValue: "***-***-1234"),
                    CardV1.IdvMethod(id: "otp-email", type: .otpEmail, maskedValue: "j***@example.com"),
                    CardV1.IdvMethod(id: "call-center", type: .callCenter, maskedValue: "+1 800 555 0100"),
                ])
        case .slow:
            try await Task.sleep(for: .seconds(60))
            return IssuerV1.AuthorizeDigitizationResponse(decision: .approved)
        case .held(let decision):
            // Bounded: a test that fails before it releases the decision must not hang.
            for _ in 0..<12_000 where !state.withLock({ $0.released }) { try await Task.sleep(for: .milliseconds(5)) }
            return try await answer(decision)
        case .unavailable:
            throw RPCError(.unavailable, "issuer host is down")
        case .refuse:
            throw RPCError(.invalidArgument, "card data is not encrypted to the issuer's registered key")
        case .refuseWith(let message):
            throw RPCError(.notFound, message)
        case .unspecified:
            return IssuerV1.AuthorizeDigitizationResponse()
        case .stepUpWithoutMethods:
            return IssuerV1.AuthorizeDigitizationResponse(decision: .requireAdditionalAuthentication)
        case .stepUpWith(let methods):
            return IssuerV1.AuthorizeDigitizationResponse(
                decision: .requireAdditionalAuthentication, idvMethods: methods)
        }
    }
}
