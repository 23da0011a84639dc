import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.tsp.v1.TokenLifecycle`: suspend, resume and delete tokens for the wallet (its own tokens), the issuer
/// (up to 10 of its tokens per call) and the TSP's operator; payment-key batches for wallets. Every committed change
/// is published to the token's wallet and issuer app.
struct LifecycleService: TspV1.TokenLifecycle.ServiceProtocol {
    static let maximumIssuerBatch = 10
    /// Limited-use payment keys per batch.
    static let keysPerBatch: UInt32 = 10
    /// The longest `ReplenishPaymentKeysRequest.request_id` kept: a wallet's UUID is 36.
    static let maxRequestIDLength = 64

    let tsp: TSPService

    func changeTokenState(_ request: TspV1.ChangeTokenStateRequest, context: ServerContext) async throws
        -> TspV1.ChangeTokenStateResponse
    {
        try await tsp.handling("ChangeTokenState", context) { log in
            guard !request.digitalCardID.isEmpty else {
                throw TSPError(.invalidArgument, "digital_card_id is required")
            }
            let event = try Self.event(request.action)
            let reason = try Self.reason(request.reasonCode)
            let isWallet = context.peer?.role == .wallet
            let initiator = isWallet ? "wallet" : "tsp"
            let nodeID = context.peer?.nodeID
            let actor = isWallet ? TokenActor.wallet(node: nodeID) : "tsp"
            let change = try await tsp.stateChanges.run {
                let journaled = try tsp.store.changeTokenState(
                    request.digitalCardID, event: event, actor: actor, reason: reason, traceID: context.traceID,
                    nowMs: tsp.nowMs,
                    announce: { TSPService.cardState($0, reason: reason, initiator: initiator) },
                    authorize: { token in
                        if isWallet { try TSPService.requireWallet(nodeID, owns: token) }
                    })
                let change = journaled.value
                log.info(
                    "token state changed",
                    [
                        "digital_card_id": request.digitalCardID, "from": change.before.state.rawValue,
                        "to": change.after.state.rawValue, "initiator": initiator, "reason": reason,
                    ])
                return await tsp.published(journaled, log: log)
            }
            return TspV1.ChangeTokenStateResponse(
                digitalCardID: request.digitalCardID, previousState: change.before.state.wire,
                tokenState: change.after.state.wire, stateVersion: change.after.stateVersion)
        }
    }

    func changeIssuerTokenStates(_ request: TspV1.ChangeIssuerTokenStatesRequest, context: ServerContext)
        async throws -> TspV1.ChangeIssuerTokenStatesResponse
    {
        try await tsp.handling("ChangeIssuerTokenStates", context) { log in
            let ids = request.digitalCardIds
            guard !ids.isEmpty else {
                throw TSPError(.invalidArgument, "digital_card_ids is required: 1 to \(Self.maximumIssuerBatch) ids")
            }
            guard ids.count <= Self.maximumIssuerBatch else {
                throw TSPError(
                    .invalidArgument,
                    "at most \(Self.maximumIssuerBatch) tokens per call; \(ids.count) were given")
            }
            guard !ids.contains("") else {
                throw TSPError(.invalidArgument, "digital_card_ids holds an empty id; name each token by its id")
            }
            if let refusal = RepeatedIDs.refusal(of: ids) { throw TSPError(.invalidArgument, refusal) }
            let event = try Self.event(request.action)
            let reason = try Self.reason(request.reasonCode)
            let authorize = try tsp.requireIssuer(context.peer?.nodeID)
            var results: [TspV1.TokenStateResult] = []
            for id in ids {
                do {
                    let change = try await tsp.stateChanges.run {
                        let journaled = try tsp.store.changeTokenState(
                            id, event: event, actorOf: { TokenActor.issuer($0.issuerID) }, reason: reason,
                            traceID: context.traceID,
                            nowMs: tsp.nowMs,
                            announce: { TSPService.cardState($0, reason: reason, initiator: "issuer") },
                            authorize: authorize)
                        return await tsp.published(journaled, log: log)
                    }
                    results.append(
                        TspV1.TokenStateResult(
                            digitalCardID: id, tokenState: change.after.state.wire,
                            stateVersion: change.after.stateVersion))
                } catch let error as TSPError where error.code != .internal {
                    // Another issuer's token keeps its state to itself: this issuer learns only that it may not act.
                    let token = error.code == .permissionDenied ? nil : try? tsp.store.token(id)
                    results.append(
                        TspV1.TokenStateResult(
                            digitalCardID: id, tokenState: token?.state.wire ?? .unspecified,
                            statusCode: error.rpcError.code.rawValue, message: error.message,
                            stateVersion: token?.stateVersion ?? 0))
                }
            }
            log.info(
                "issuer changed token states",
                [
                    "action": event.rawValue, "reason": reason, "tokens": "\(ids.count)",
                    "refused": "\(results.filter { $0.statusCode != 0 }.count)",
                ])
            return TspV1.ChangeIssuerTokenStatesResponse(results: results)
        }
    }

    /// The tokens a listing (`GetTokenStates`, `GetIssuerTokens`) is asked about by id: at most a page's worth,
    /// counted as sent (an id named twice is answered once, but counts twice here). Named tokens come in one response,
    /// so a page token with them is refused rather than ignored: the caller meant one of the two.
    static func namedTokens(_ ids: [String], pageToken: String, call: String) throws(TSPError) -> [String] {
        guard ids.isEmpty || pageToken.isEmpty else {
            throw TSPError(
                .invalidArgument,
                "\(call): page_token pages the whole listing, and digital_card_ids are answered in one response "
                    + "without paging; send one or the other")
        }
        guard ids.count <= PageRequest.maximumSize else {
            throw TSPError(
                .invalidArgument,
                "\(call): at most \(PageRequest.maximumSize) digital_card_ids per call, repeats counted; "
                    + "\(ids.count) were given")
        }
        return ids
    }

    func getTokenStates(_ request: TspV1.GetTokenStatesRequest, context: ServerContext) async throws
        -> TspV1.GetTokenStatesResponse
    {
        try await tsp.handling("GetTokenStates", context) { _ in
            let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "GetTokenStates")
            // The role check let only wallets in; a wallet certificate always names its node.
            guard let nodeID = context.peer?.nodeID, !nodeID.isEmpty else {
                throw TSPError(.permissionDenied, "GetTokenStates answers a wallet node, named by its certificate")
            }
            let ids = try Self.namedTokens(
                request.digitalCardIds, pageToken: request.pageToken, call: "GetTokenStates")
            let listed: [(token: TokenRecord, row: Int64)]
            let next: String
            if ids.isEmpty {
                let rows = try tsp.store.tokens(
                    walletNodeID: nodeID, afterRow: try page.afterRow(call: "GetTokenStates"), limit: page.size + 1)
                (listed, next) = page.split(rows) { PageRequest.key(row: $0.row) }
            } else {
                // Each token once, where it was first named.
                var seen = Set<String>()
                listed = try ids.filter { seen.insert($0).inserted }.compactMap { id in
                    try tsp.store.token(id).flatMap { $0.walletNodeID == nodeID ? ($0, 0) : nil }
                }
                next = ""
            }
            return TspV1.GetTokenStatesResponse(
                tokens: listed.map {
                    TspV1.WalletTokenState(
                        digitalCardID: $0.token.digitalCardID, tokenState: $0.token.state.wire,
                        stateVersion: $0.token.stateVersion, panLast4: $0.token.panLast4)
                }, nextPageToken: next)
        }
    }

    func replenishPaymentKeys(_ request: TspV1.ReplenishPaymentKeysRequest, context: ServerContext) async throws
        -> TspV1.ReplenishPaymentKeysResponse
    {
        try await tsp.handling("ReplenishPaymentKeys", context) { log in
            let token = try tsp.existingToken(request.digitalCardID)
            try TSPService.requireWallet(context.peer?.nodeID, owns: token)
            // The token's state is checked where the batch is stored (`insertKeyBatch`), after a request id asked
            // again is answered with its batch.
            guard request.requestID.utf8.count <= Self.maxRequestIDLength else {
                throw TSPError(
                    .invalidArgument,
                    "request_id has \(request.requestID.utf8.count) bytes; at most \(Self.maxRequestIDLength) are kept")
            }
            // Kept with the batch, and shown: an id holding a card number would keep it in clear, and one with a line
            // break or a format character (U+202E) is refused as Digitize refuses it.
            if !request.requestID.isEmpty, let problem = IdentifierRules.problem(request.requestID) {
                throw TSPError(.invalidArgument, "request_id must be \(problem); choose another (a UUID, say)")
            }
            let batchID = UUID().uuidString.lowercased()
            let body = TspV1.ReplenishmentBody(
                keysIssued: Self.keysPerBatch, keysRemainingBefore: request.keysRemaining)
            let announcement = Announcement(
                notification: D1.notification(
                    .replenishment, from: .mg, cardID: token.digitalCardID, body: .replenishment(body)),
                recipients: [.issuerApp])
            let batch = await tsp.published(
                try tsp.store.insertKeyBatch(
                    id: batchID, digitalCardID: token.digitalCardID, issued: Self.keysPerBatch,
                    remainingBefore: request.keysRemaining, requestID: request.requestID, nowMs: tsp.nowMs,
                    announcing: [announcement]),
                log: log)
            if batch.reissued {
                log.info(
                    "key batch answered again",
                    ["digital_card_id": token.digitalCardID, "batch_id": batch.id, "request_id": request.requestID])
            }
            return TspV1.ReplenishPaymentKeysResponse(
                batchID: batch.id, keysIssued: batch.issued, reissued: batch.reissued)
        }
    }

    func requestReplenishment(_ request: TspV1.RequestReplenishmentRequest, context: ServerContext) async throws
        -> TspV1.RequestReplenishmentResponse
    {
        try await tsp.handling("RequestReplenishment", context) { log in
            let token = try tsp.existingToken(request.digitalCardID)
            guard token.state == .active else {
                throw TSPError(
                    .failedPrecondition,
                    "token \"\(token.digitalCardID)\" is \(token.state); a replenishment is asked only of an ACTIVE "
                        + "token's wallet (payment keys are issued to ACTIVE tokens only)")
            }
            let id = try await tsp.publish(
                D1.notification(
                    .replenishment, from: .mg, cardID: token.digitalCardID, body: .replenishment(.init())),
                about: token, to: [.wallet], log: log)
            guard let id else {
                throw TSPError(.failedPrecondition, "the token's wallet cannot be reached through the broker")
            }
            return TspV1.RequestReplenishmentResponse(messageID: id)
        }
    }

    static func event(_ action: TspV1.LifecycleAction) throws -> TokenLifecycleStateMachine.Event {
        switch action {
        case .suspend: return .suspend
        case .resume: return .resume
        case .delete: return .delete
        case .unspecified, .unrecognized:
            throw TSPError(
                .invalidArgument,
                "action must be LIFECYCLE_ACTION_SUSPEND, LIFECYCLE_ACTION_RESUME or LIFECYCLE_ACTION_DELETE")
        }
    }

    /// A reason code: required, short, upper-case words (it is shown to people and stored in the audit trail).
    static func reason(_ code: String) throws -> String {
        switch IdentifierRules.reasonCodeProblem(code) {
        case nil:
            return code
        case .missing:
            throw TSPError(.invalidArgument, "reason_code is required, e.g. USER_REQUEST, LOST_CARD, FRAUD_SUSPECTED")
        case .form:
            throw TSPError(
                .invalidArgument, "reason_code must be 1-64 characters of A-Z, 0-9 and _, e.g. LOST_CARD")
        case .cardNumber:
            // Digits are allowed, but not a card number: the code is kept in the token's history and told to every
            // party, where card numbers only ever appear encrypted or masked.
            throw TSPError(
                .invalidArgument,
                "reason_code holds what looks like a card number, which the TSP would keep and tell every party; "
                    + "give a code such as LOST_CARD")
        }
    }
}
