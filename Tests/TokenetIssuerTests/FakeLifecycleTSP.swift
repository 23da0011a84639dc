import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// A TSP that records the issuer's lifecycle, renewal, message and AUTHN calls.
final class FakeLifecycleTSP: TspV1.TokenLifecycle.ServiceProtocol, TspV1.IssuerCardUpdates.ServiceProtocol,
    TspV1.Transactions.ServiceProtocol
{
    struct State {
        var changes: [TspV1.ChangeIssuerTokenStatesRequest] = []
        var renewals: [(TspV1.RenewCardRequest, CardData)] = []
        var messages: [TspV1.SendCardMessageRequest] = []
        var answers: [TspV1.AnswerAuthnRequest] = []
        /// Holds the next renewal call (only that one) until the gate opens.
        var holdNextRenewal: Gate?
        /// Holds the next ChangeIssuerTokenStates call (only that one) until the gate opens.
        var holdNextChange: Gate?
        /// How the TSP answers renewals: `refusal` refuses them unrecorded, `lostAnswers` renewals are recorded
        /// (the TSP moved the tokens) but answered with UNAVAILABLE, as when the answer is lost on the way.
        var refusal: RPCError?
        var lostAnswers = 0
        /// Renewals lost on the way to the TSP: not recorded (the tokens keep their card), answered UNAVAILABLE.
        var droppedRenewals = 0
        /// The card each token holds after the renewals the TSP recorded; a token not in it holds its first card.
        var held: [String: CardData] = [:]
        /// GetFundingCards: how often it was asked, and the failure it answers with instead (a TSP out of reach).
        var fundingAsks = 0
        var fundingFailure: RPCError?
        /// Holds the next GetFundingCards call (only that one) until the gate opens.
        var holdNextFunding: Gate?
        /// RenewCard calls by number (1 for the first) that fail with the given error, unrecorded.
        var failingRenewalCalls: [Int: RPCError] = [:]
        var renewalCalls = 0
        /// ChangeIssuerTokenStates calls by number (1 for the first) that fail with the given error, unrecorded.
        var failingChangeCalls: [Int: RPCError] = [:]
        var changeCalls = 0
        /// Tokens the TSP has deleted (a delete makes one so) and tokens it does not know: each call answers them in
        /// their own results, as the TSP does.
        var deleted: Set<String> = []
        var unknown: Set<String> = []
        /// Tokens of another issuer: refused PERMISSION_DENIED in their own results, nothing of them told.
        var foreign: Set<String> = []
        /// Tokens waiting for ID&V: a suspend is refused FAILED_PRECONDITION for them, as the TSP refuses it.
        var inactive: Set<String> = []
        /// Tokens a renewal fails for a reason that may pass (the status given), in their own results.
        var failingTokens: [String: StatusCode] = [:]
        /// GetIssuerTokens: the issuer's tokens as listed (two a page), the stand-in advice each named one carries,
        /// the ids of each call that named tokens, and failures answered instead, in turn (a TSP out of reach).
        var issuerTokens: [TspV1.IssuerToken] = []
        var advices: [String: TspV1.StandInAdviceBody] = [:]
        var namedAsks: [[String]] = []
        var listingFailures: [RPCError] = []
        var listingCalls = 0

        /// The result refusing token `id` when the TSP does not know it, it is another issuer's or it is deleted, as
        /// the TSP gives it.
        func refusal(of id: String) -> TspV1.TokenStateResult? {
            if unknown.contains(id) {
                return .init(digitalCardID: id, statusCode: StatusCode.notFound.rawValue, message: "no token")
            }
            if foreign.contains(id) {
                return .init(
                    digitalCardID: id, statusCode: StatusCode.permissionDenied.rawValue,
                    message: "token \"\(id)\" belongs to another issuer")
            }
            if deleted.contains(id) {
                return .init(
                    digitalCardID: id, tokenState: .deactivated,
                    statusCode: StatusCode.failedPrecondition.rawValue, message: "the token is deleted")
            }
            return nil
        }
    }

    /// The TSP's limit on the tokens of one issuer call.
    static func checkBatch(_ ids: [String]) throws {
        guard (1...10).contains(ids.count), Set(ids).count == ids.count else {
            throw RPCError(.invalidArgument, "1 to 10 digital card ids, each at most once; \(ids.count) were given")
        }
    }

    let key: RSAPrivateKey
    let state = Mutex(State())

    init(key: RSAPrivateKey) { self.key = key }

    func changeTokenState(_ request: TspV1.ChangeTokenStateRequest, context: ServerContext) async throws
        -> TspV1.ChangeTokenStateResponse
    { throw RPCError(.unimplemented, "not for issuers") }

    func changeIssuerTokenStates(_ request: TspV1.ChangeIssuerTokenStatesRequest, context: ServerContext)
        async throws -> TspV1.ChangeIssuerTokenStatesResponse
    {
        let gate = state.withLock { state in
            defer { state.holdNextChange = nil }
            return state.holdNextChange
        }
        await gate?.pass()
        try Self.checkBatch(request.digitalCardIds)
        return try state.withLock { state throws(RPCError) in
            state.changeCalls += 1
            if let failure = state.failingChangeCalls[state.changeCalls] { throw failure }
            state.changes.append(request)
            return TspV1.ChangeIssuerTokenStatesResponse(
                results: request.digitalCardIds.map { id in
                    if let refusal = state.refusal(of: id) { return refusal }
                    switch request.action {
                    case .delete:
                        state.deleted.insert(id)
                        return .init(digitalCardID: id, tokenState: .deactivated)
                    case .resume: return .init(digitalCardID: id, tokenState: .active)
                    case .suspend where state.inactive.contains(id):
                        return .init(
                            digitalCardID: id, tokenState: .inactive,
                            statusCode: StatusCode.failedPrecondition.rawValue,
                            message: "cannot suspend a token that is INACTIVE")
                    default: return .init(digitalCardID: id, tokenState: .suspended)
                    }
                })
        }
    }

    func replenishPaymentKeys(_ request: TspV1.ReplenishPaymentKeysRequest, context: ServerContext) async throws
        -> TspV1.ReplenishPaymentKeysResponse
    { throw RPCError(.unimplemented, "not for issuers") }

    func getTokenStates(_ request: TspV1.GetTokenStatesRequest, context: ServerContext) async throws
        -> TspV1.GetTokenStatesResponse
    { throw RPCError(.permissionDenied, "wallets only") }

    func requestReplenishment(_ request: TspV1.RequestReplenishmentRequest, context: ServerContext) async throws
        -> TspV1.RequestReplenishmentResponse
    { throw RPCError(.unimplemented, "not for issuers") }

    func renewCard(_ request: TspV1.RenewCardRequest, context: ServerContext) async throws -> TspV1.RenewCardResponse {
        let gate = state.withLock { state in
            defer { state.holdNextRenewal = nil }
            return state.holdNextRenewal
        }
        await gate?.pass()
        try Self.checkBatch(request.digitalCardIds)
        let card = try CardData(json: try JWE.decrypt(request.cardData?.jwe ?? "", with: key))
        let (lost, results) = try state.withLock { state throws(RPCError) in
            state.renewalCalls += 1
            if let failure = state.failingRenewalCalls[state.renewalCalls] { throw failure }
            if let refusal = state.refusal { throw refusal }
            if state.droppedRenewals > 0 {
                state.droppedRenewals -= 1
                throw RPCError(.unavailable, "the connection to the TSP was lost")
            }
            state.renewals.append((request, card))
            let results: [TspV1.TokenStateResult] = request.digitalCardIds.map { id in
                if let refusal = state.refusal(of: id) { return refusal }
                if let code = state.failingTokens[id] {
                    return .init(digitalCardID: id, statusCode: code.rawValue, message: "the token is busy")
                }
                state.held[id] = card
                return .init(digitalCardID: id, tokenState: .active)
            }
            guard state.lostAnswers > 0 else { return (false, results) }
            state.lostAnswers -= 1
            return (true, results)
        }
        if lost { throw RPCError(.unavailable, "the connection to the TSP was lost") }
        return TspV1.RenewCardResponse(
            renewedDigitalCardIds: results.filter { $0.statusCode == 0 }.map(\.digitalCardID),
            panLast4: try card.pan().last4, expiry: "", results: results)
    }

    func getIssuerTokens(_ request: TspV1.GetIssuerTokensRequest, context: ServerContext) async throws
        -> TspV1.GetIssuerTokensResponse
    {
        try state.withLock { state throws(RPCError) in
            state.listingCalls += 1
            if !state.listingFailures.isEmpty { throw state.listingFailures.removeFirst() }
            if !request.digitalCardIds.isEmpty {
                state.namedAsks.append(request.digitalCardIds)
                let named = request.digitalCardIds.compactMap { id in
                    state.issuerTokens.first { $0.digitalCardID == id }
                }
                return TspV1.GetIssuerTokensResponse(
                    tokens: named.map { token in
                        var token = token
                        token.standInAdvice = state.advices[token.digitalCardID]
                        return token
                    })
            }
            let start = Int(request.pageToken) ?? 0
            let end = min(start + 2, state.issuerTokens.count)
            return TspV1.GetIssuerTokensResponse(
                tokens: Array(state.issuerTokens[start..<end]),
                nextPageToken: end < state.issuerTokens.count ? "\(end)" : "")
        }
    }

    func getFundingCards(_ request: TspV1.GetFundingCardsRequest, context: ServerContext) async throws
        -> TspV1.GetFundingCardsResponse
    {
        let gate = state.withLock { state in
            defer { state.holdNextFunding = nil }
            return state.holdNextFunding
        }
        await gate?.pass()
        try Self.checkBatch(request.digitalCardIds)
        let asked = try CardData(json: try JWE.decrypt(request.cardData?.jwe ?? "", with: key)).pan()
        let (held, fake) = try state.withLock { state throws(RPCError) in
            if let failure = state.fundingFailure { throw failure }
            state.fundingAsks += 1
            return (state.held, state)
        }
        let deleted = fake.deleted
        return TspV1.GetFundingCardsResponse(
            fundingCards: try request.digitalCardIds.map { id in
                // Unknown and foreign tokens are refused in their own answers, as the TSP refuses them.
                if let refusal = fake.refusal(of: id), refusal.tokenState != .deactivated {
                    return TspV1.FundingCard(
                        digitalCardID: id, statusCode: refusal.statusCode, message: refusal.message)
                }
                let tokenState: CardV1.TokenState = deleted.contains(id) ? .deactivated : .active
                guard let card = held[id] else {
                    return TspV1.FundingCard(digitalCardID: id, tokenState: tokenState, panLast4: "0009")
                }
                let pan = try card.pan()
                return TspV1.FundingCard(
                    digitalCardID: id, tokenState: tokenState, panLast4: pan.last4,
                    expiry: try card.expiry().description, panMatches: pan == asked)
            })
    }

    func sendCardMessage(_ request: TspV1.SendCardMessageRequest, context: ServerContext) async throws
        -> TspV1.SendCardMessageResponse
    {
        state.withLock { $0.messages.append(request) }
        return TspV1.SendCardMessageResponse(messageID: "msg-1")
    }

    func simulateTransaction(_ request: TspV1.SimulateTransactionRequest, context: ServerContext) async throws
        -> TspV1.SimulateTransactionResponse
    { throw RPCError(.unimplemented, "not for issuers") }

    func answerAuthn(_ request: TspV1.AnswerAuthnRequest, context: ServerContext) async throws
        -> TspV1.AnswerAuthnResponse
    {
        state.withLock { $0.answers.append(request) }
        return TspV1.AnswerAuthnResponse(
            authnRequestID: request.authnRequestID, status: request.proceed ? "PROCEEDED" : "CANCELLED",
            transactionID: "txn-1")
    }

    func listTransactions(_ request: TspV1.ListTransactionsRequest, context: ServerContext) async throws
        -> TspV1.ListTransactionsResponse
    { TspV1.ListTransactionsResponse() }

    /// This TSP's services beside the registration service of `issuers`.
    func router(with issuers: FakeTSP) -> RPCRouter {
        var router = issuers.router
        (self as any TspV1.TokenLifecycle.ServiceProtocol).register(on: &router)
        (self as any TspV1.IssuerCardUpdates.ServiceProtocol).register(on: &router)
        (self as any TspV1.Transactions.ServiceProtocol).register(on: &router)
        return router
    }
}
