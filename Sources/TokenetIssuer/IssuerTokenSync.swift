import TokenetNode
import TokenetRPC
import TokenetWire

/// Brings the issuer's record of its tokens in line with the TSP's (`GetIssuerTokens`) each time the notification
/// stream opens. The broker keeps a message for an issuer node that is away only so long (its retention), and what
/// it dropped unread the issuer never learned otherwise:
/// - a STAND_IN_ADVICE: the token the stand-in approved was not among its card's tokens, so a lost-card
///   `suspend-tokens --card` and a renewal left it out (it kept the card's old number);
/// - a CARD_STATE DEACTIVATED: the deleted token still counted among its card's, and every card-wide change and
///   renewal sent it to the TSP, to be refused.
///
/// A stand-in token the issuer has no record of is asked for again by id, with its advice, and recorded as the
/// message would have been (moved onto its renewed card first when it holds the card's previous number). A deleted
/// token the issuer has a decision for is recorded deleted. A token the issuer had recorded unknown to the TSP, and
/// that the TSP lists, is sent again in card-wide changes.
struct IssuerTokenSync: Sendable {
    let store: IssuerStore
    let decisions: IssuerDecisionsService
    let cardCare: IssuerCardCareService
    let signal: StreamOpenedSignal
    let logger: Logger
    /// Waits the given milliseconds before a check that failed is tried again; throws when the node stops.
    var sleep: @Sendable (UInt64) async throws -> Void = { try await Task.sleep(for: .milliseconds($0)) }

    /// What one check found and did.
    struct Summary: Equatable, Sendable {
        /// Tokens the TSP listed.
        var listed = 0
        /// Decisions of the TSP's stand-in recorded now (approvals with their cards, and declines).
        var standIn = 0
        /// Tokens recorded deleted now.
        var deleted = 0
        /// Cards' pending token changes (`PendingTokenChange`) settled now, and those still pending.
        var tokenChangesSettled = 0
        var tokenChangesPending = 0
    }

    /// How long one call may take: a TSP that holds the call must not hold the next check back for ever.
    var callWait = Duration.seconds(30)
    /// Tokens asked for by id in one call (the TSP's limit).
    static let namedBatch = PageRequest.maximumSize

    /// Checks once per signal until the task is cancelled (the node stops); the node subscribes, so the stream
    /// opens, only once registered (`IssuerNode`). A check that fails is tried again; a TSP that does not offer the
    /// call (an older build) is not asked again until the next stream.
    func run() async {
        await signal.checkEachTime(
            sleep: sleep,
            // The registration again, each time the stream opens: a TSP that restarted lost which node held the
            // stream, and a second node started with this one's certificate could register its key and BIN ranges
            // before this one was back. Holding the stream now, this node's registration is the one that stands.
            // Each a flow of its own, whose lines here and at the TSP share its trace id.
            opened: {
                await FlowTrace.runAsNewFlow {
                    do {
                        try await cardCare.tsp.register()
                        logger.debug("registration with the TSP renewed")
                    } catch {
                        logger.warning("the issuer's registration could not be renewed", ["error": "\(error)"])
                    }
                }
            },
            check: { _ = try await FlowTrace.runAsNewFlow { try await check() } },
            failed: { error, failuresBefore in
                let rpc = error as? RPCError
                let message = rpc?.message ?? "\(error)"
                if rpc?.cause is OlderTSP {
                    logger.warning("the issuer's tokens could not be checked with the TSP", ["error": message])
                    return .waitForNextStream
                }
                if failuresBefore == 0 {
                    logger.warning(
                        "the issuer's tokens could not be checked with the TSP; trying again", ["error": message])
                }
                return .retry
            })
    }

    /// Reads every page of the TSP's listing, records the stand-in tokens and deletes the issuer did not know of,
    /// and logs what it found.
    @discardableResult
    func check() async throws -> Summary {
        try cardCare.tsp.requireRegistered()
        let client = TspV1.IssuerCardUpdates.Client(try cardCare.tspCaller())
        var summary = Summary()
        var pageToken = ""
        var live: [String] = []
        var deactivated: [String] = []
        var standIn: [String] = []
        var deactivatedStandIn: [String] = []
        repeat {
            let page = try await ask(client, TspV1.GetIssuerTokensRequest(pageToken: pageToken))
            summary.listed += page.tokens.count
            for token in page.tokens {
                if token.tokenState == .deactivated {
                    deactivated.append(token.digitalCardID)
                    if token.decidedByStandIn { deactivatedStandIn.append(token.digitalCardID) }
                } else {
                    live.append(token.digitalCardID)
                    if token.decidedByStandIn { standIn.append(token.digitalCardID) }
                }
            }
            pageToken = page.nextPageToken
        } while !pageToken.isEmpty

        store.noteKnownToTSP(try store.unknownTokens(among: live), why: "GetIssuerTokens", log: logger)
        // The stand-in's decisions first: a decline that came before the issuer's own late approval leaves a
        // DEACTIVATED token the issuer counts until the decline is recorded, and it is no delete. A DEACTIVATED one
        // the issuer does not count has nothing to correct (and an approval deleted since has no advice left).
        let unrecorded = try (standIn + store.countedTokens(among: deactivatedStandIn)).filter {
            try !store.hasDecision(digitalCardID: $0, rule: IssuerDecisionsService.standInRule)
        }
        for start in stride(from: 0, to: unrecorded.count, by: Self.namedBatch) {
            let batch = Array(unrecorded[start..<min(start + Self.namedBatch, unrecorded.count)])
            let named = try await ask(client, TspV1.GetIssuerTokensRequest(digitalCardIds: batch))
            for token in named.tokens {
                guard let advice = token.standInAdvice, try await record(advice, of: token.digitalCardID) else {
                    continue
                }
                summary.standIn += 1
            }
        }
        // Only tokens the issuer counts among its cards': a digitization declined (by the issuer, or by the stand-in)
        // left a DEACTIVATED token too, but never a live one, and is no delete.
        let deleted = try store.recordDeletedTokens(try store.countedTokens(among: deactivated))
        summary.deleted = deleted.count
        if !deleted.isEmpty {
            logger.info(
                "tokens the TSP deleted recorded deleted (their messages never reached the issuer)",
                ["tokens": deleted.sorted().joined(separator: ",")])
        }
        // The card blocks (or openings) whose token changes the TSP has not yet answered: a node stopped before it
        // answered, or a TSP out of reach, leaves them to be made now.
        let round = try await cardCare.settlePendingTokenChanges(
            log: logger, options: CallOptions(timeout: callTimeout))
        (summary.tokenChangesSettled, summary.tokenChangesPending) = (round.settled, round.pending)
        // Those left are tried again on their own schedule (`retryPendingTokenChanges`), not by listing every token
        // again.
        if round.pending > 0 { cardCare.pendingTokenChangesLeft.streamOpened() }
        logger.info(
            "the issuer's tokens checked with the TSP",
            [
                "tokens": "\(summary.listed)", "stand_in_recorded": "\(summary.standIn)",
                "deleted": "\(summary.deleted)",
                "token_changes_settled": "\(summary.tokenChangesSettled)",
                "token_changes_pending": "\(summary.tokenChangesPending)",
            ])
        return summary
    }

    /// The TSP's answer to `request`, within `callWait`; its refusal keeps its code and says whose it is. Run for an
    /// operator's `SyncWithTsp`, the call ends a little before the operator's own deadline
    /// (`CallOptions.answeringInTime`), so that a TSP that does not answer is named as such rather than
    /// by the operator's bare DEADLINE_EXCEEDED.
    private func ask(_ client: TspV1.IssuerCardUpdates.Client, _ request: TspV1.GetIssuerTokensRequest) async throws
        -> TspV1.GetIssuerTokensResponse
    {
        let timeout = callTimeout
        do {
            return try await client.getIssuerTokens(request, options: CallOptions(timeout: timeout))
        } catch let error as RPCError {
            let reason =
                error.code == .deadlineExceeded && timeout < callWait
                ? "the TSP did not answer within this call's deadline" : error.message
            if error.code == .unimplemented {
                throw RPCError(
                    .failedPrecondition, "the TSP does not offer GetIssuerTokens (an older build): \(error.message)",
                    cause: OlderTSP())
            }
            throw RPCError(Self.code(of: error), "the TSP's GetIssuerTokens failed: \(reason)")
        }
    }

    /// How long one call to the TSP may take: `callWait`, or less when the operator's own deadline leaves less.
    private var callTimeout: Duration {
        CallOptions.answeringInTime.timeout.map { min($0, callWait) } ?? callWait
    }

    /// The cause of a check the TSP cannot answer at all: it is not asked again until the stream opens again.
    struct OlderTSP: Error {}

    /// The status an operator gets for the TSP's failure: a deadline, a cancel and a refused precondition (not
    /// registered) keep their codes; anything else the TSP answered (INVALID_ARGUMENT, PERMISSION_DENIED,
    /// INTERNAL…) is no mistake of the operator's, and reads as the TSP being unavailable for this.
    static func code(of error: RPCError) -> StatusCode {
        switch error.code {
        case .deadlineExceeded, .failedPrecondition, .cancelled: error.code
        default: .unavailable
        }
    }

    /// Records the stand-in's advice about `digitalCardID` as the message would have (`IssuerNodeNotifications`);
    /// whether it recorded it now.
    private func record(_ advice: TspV1.StandInAdviceBody, of digitalCardID: String) async throws -> Bool {
        // No message brought it: its log lines say so (`via`).
        let source = ""
        guard
            let plan = try decisions.standInAdvicePlan(
                advice, digitalCardID: digitalCardID, messageID: source, log: logger)
        else { return false }
        if let refusal = plan.refusal {
            try await cardCare.deleteStandInToken(digitalCardID, because: refusal, log: logger)
        } else if plan.outdated, let card = plan.card {
            try await cardCare.moveStandInToken(digitalCardID, onto: card, log: logger)
        }
        return try decisions.record(plan, decidedAtMs: advice.decidedAtMs, messageID: source, log: logger)
    }
}
