import Synchronization
import TokenetRPC
import TokenetWire

/// The TSP's lifecycle API as the wallet sees it: state changes follow the real state machine's answers for the
/// cases tested, key batches are numbered, and every request is recorded.
final class FakeTSPLifecycle: TspV1.TokenLifecycle.ServiceProtocol {
    struct State {
        var changes: [TspV1.ChangeTokenStateRequest] = []
        var replenishments: [TspV1.ReplenishPaymentKeysRequest] = []
        var states: [String: CardV1.TokenState] = [:]
        /// Each token's state version, as the TSP counts them: 2 for a token digitized ACTIVE (made INACTIVE, then
        /// approved), one more at each change.
        var versions: [String: UInt64] = [:]
        /// When set, ChangeTokenState fails with it.
        var refusal: RPCError?
        /// When set, ReplenishPaymentKeys fails with it (nothing is recorded).
        var replenishmentFailure: RPCError?
        /// When true, ReplenishPaymentKeys waits for `releaseHeldReplenishment` before it answers: a TSP slow to
        /// answer while the wallet stops.
        var holdReplenishment = false
        /// How many of the next batches are issued and then lost on the way back (the wallet gets UNAVAILABLE).
        var answersToLose = 0
        /// The batches issued, and the batch issued for each request id, which answers that id again as the TSP does.
        var issuedBatches = 0
        var batchOfRequest: [String: String] = [:]
        var held: [CheckedContinuation<Void, Never>] = []
        /// The last four digits GetTokenStates gives a token's card (none by default, as for a TSP that does not
        /// send them).
        var panLast4: [String: String] = [:]
        /// The GetTokenStates calls answered.
        var stateQueries = 0
        /// Runs once, after the next GetTokenStates answered: a change made at the TSP while the wallet reads.
        var afterStateQuery: (@Sendable (inout State) -> Void)?
        /// When set, GetTokenStates fails with it.
        var stateQueryFailure: RPCError?
        /// Runs before ChangeTokenState answers: what reaches the wallet while its call is under way.
        var whileChanging: (@Sendable (TspV1.ChangeTokenStateRequest, CardV1.TokenState) async throws -> Void)?
    }

    static let keysPerBatch: UInt32 = 10
    let state = Mutex(State())

    var recorded: State { state.withLock { $0 } }

    /// One element for each ReplenishPaymentKeys that `holdReplenishment` holds, once it is held.
    let heldReplenishments = AsyncStream.makeStream(of: Void.self)

    /// Releases every ReplenishPaymentKeys held so far.
    func releaseHeldReplenishment() {
        let held = state.withLock { state in
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }

    func changeTokenState(_ request: TspV1.ChangeTokenStateRequest, context: ServerContext) async throws
        -> TspV1.ChangeTokenStateResponse
    {
        let (answer, whileChanging) = try state.withLock { state in
            state.changes.append(request)
            if let refusal = state.refusal { throw refusal }
            let before = state.states[request.digitalCardID] ?? .active
            let after: CardV1.TokenState
            switch request.action {
            case .suspend: after = .suspended
            case .resume: after = .active
            default: after = .deactivated
            }
            state.states[request.digitalCardID] = after
            let version = (state.versions[request.digitalCardID] ?? 2) + 1
            state.versions[request.digitalCardID] = version
            return (
                TspV1.ChangeTokenStateResponse(
                    digitalCardID: request.digitalCardID, previousState: before, tokenState: after,
                    stateVersion: version),
                state.whileChanging
            )
        }
        try await whileChanging?(request, answer.tokenState)
        return answer
    }

    func changeIssuerTokenStates(_ request: TspV1.ChangeIssuerTokenStatesRequest, context: ServerContext)
        async throws -> TspV1.ChangeIssuerTokenStatesResponse
    { throw RPCError(.permissionDenied, "issuers only") }

    func replenishPaymentKeys(_ request: TspV1.ReplenishPaymentKeysRequest, context: ServerContext) async throws
        -> TspV1.ReplenishPaymentKeysResponse
    {
        if state.withLock({ $0.holdReplenishment }) {
            await withCheckedContinuation { continuation in
                state.withLock { $0.held.append(continuation) }
                heldReplenishments.continuation.yield()
            }
        }
        return try state.withLock { state in
            if let failure = state.replenishmentFailure { throw failure }
            state.replenishments.append(request)
            if let batch = state.batchOfRequest[request.requestID] {
                return TspV1.ReplenishPaymentKeysResponse(batchID: batch, keysIssued: Self.keysPerBatch, reissued: true)
            }
            state.issuedBatches += 1
            let batch = "batch-\(state.issuedBatches)"
            if !request.requestID.isEmpty { state.batchOfRequest[request.requestID] = batch }
            if state.answersToLose > 0 {
                state.answersToLose -= 1
                throw RPCError(.unavailable, "the answer was lost on its way back")
            }
            return TspV1.ReplenishPaymentKeysResponse(batchID: batch, keysIssued: Self.keysPerBatch)
        }
    }

    /// Every token with a state, in pages of two (so that a test of a few tokens reads several pages), ordered by
    /// id.
    func getTokenStates(_ request: TspV1.GetTokenStatesRequest, context: ServerContext) async throws
        -> TspV1.GetTokenStatesResponse
    {
        try state.withLock { state in
            if let failure = state.stateQueryFailure { throw failure }
            state.stateQueries += 1
            defer {
                if let change = state.afterStateQuery {
                    state.afterStateQuery = nil
                    change(&state)
                }
            }
            if !request.digitalCardIds.isEmpty {
                return TspV1.GetTokenStatesResponse(
                    tokens: request.digitalCardIds.compactMap { id in
                        state.states[id].map {
                            TspV1.WalletTokenState(
                                digitalCardID: id, tokenState: $0, stateVersion: state.versions[id] ?? 2,
                                panLast4: state.panLast4[id] ?? "")
                        }
                    })
            }
            let ids = state.states.keys.sorted().filter { $0 > request.pageToken }
            let page = ids.prefix(2)
            return TspV1.GetTokenStatesResponse(
                tokens: page.map {
                    TspV1.WalletTokenState(
                        digitalCardID: $0, tokenState: state.states[$0] ?? .active,
                        stateVersion: state.versions[$0] ?? 2, panLast4: state.panLast4[$0] ?? "")
                },
                nextPageToken: ids.count > 2 ? page.last ?? "" : "")
        }
    }

    func requestReplenishment(_ request: TspV1.RequestReplenishmentRequest, context: ServerContext) async throws
        -> TspV1.RequestReplenishmentResponse
    { throw RPCError(.permissionDenied, "operators only") }
}
