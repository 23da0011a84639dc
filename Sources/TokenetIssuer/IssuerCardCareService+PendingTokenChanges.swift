import TokenetNode
import TokenetRPC
import TokenetWire

/// The changes of cards' tokens a block or opening left pending (`PendingTokenChange`), made again until the TSP has
/// answered each: on the node's own schedule, each time its stream to the TSP opens (`IssuerTokenSync`), and on the
/// operator's `SyncWithTsp`.
extension IssuerCardCareService {
    /// Makes the pending changes of cards' tokens each time a block or opening leaves one
    /// (`pendingTokenChangesLeft`), and again after 1, 5, 30 and then every 60 seconds while any stays pending, until
    /// the node stops. The check each time the issuer's stream to the TSP opens makes them too
    /// (`IssuerTokenSync`), and the operator's `SyncWithTsp`; a card is made by one of them at a time.
    func retryPendingTokenChanges(
        sleep: @Sendable (UInt64) async throws -> Void = { try await Task.sleep(for: .milliseconds($0)) },
        callWait: Duration = .seconds(30)
    ) async {
        await pendingTokenChangesLeft.checkEachTime(
            sleep: sleep,
            check: {
                let left = try await FlowTrace.runAsNewFlow {
                    try await settlePendingTokenChanges(log: logger, options: CallOptions(timeout: callWait))
                }
                // A card another call holds is not counted: that call asks for its change when it ends.
                if left.failed > 0 { throw TokenChangesLeft(count: left.failed) }
            },
            failed: { error, failuresBefore in
                if failuresBefore == 0 {
                    logger.warning(
                        "changes of cards' tokens are still pending at the TSP; trying again",
                        ["cards": "\((error as? TokenChangesLeft)?.count ?? 0)", "error": "\(error)"])
                }
                return .retry
            })
    }

    /// Cards whose token change is still pending after a round of `settlePendingTokenChanges`.
    struct TokenChangesLeft: Error, CustomStringConvertible {
        var count: Int
        var description: String { "\(count) card(s) still have a change of their tokens pending (issuer cards)" }
    }

    /// What one round of `settlePendingTokenChanges` did: changes settled, changes still pending (`failed` of them
    /// because making them failed now, the others held by another call that makes or replaces them).
    struct PendingTokenChangesRound: Equatable {
        var settled = 0
        var pending = 0
        var failed = 0
    }

    /// Makes again every card's token change still pending (`PendingTokenChange`), oldest card id first, each call
    /// within `options`. A card whose change fails stays pending and the next is tried.
    func settlePendingTokenChanges(log: Logger, options: CallOptions) async throws -> PendingTokenChangesRound {
        var round = PendingTokenChangesRound()
        for (cardID, _) in try store.pendingTokenChanges() {
            // The operator's own block or opening of the card is under way: it makes or replaces the change.
            guard tokenChanges.begin(cardID) else {
                round.pending += 1
                continue
            }
            defer { tokenChanges.end(cardID) }
            // Read again under the claim: while the cards before it were being made, a newer block or opening of
            // this card may have made or replaced the change listed, which made now would undo it.
            guard let change = try store.pendingTokenChange(ofCard: cardID) else { continue }
            let action = change.actionName
            do {
                let applied = try await applyTokenChange(change, toCard: cardID, log: log, options: options)
                if applied.settled {
                    round.settled += 1
                } else {
                    round.pending += 1
                    round.failed += 1
                }
                log.info(
                    applied.settled
                        ? "pending change of a card's tokens made" : "pending change of a card's tokens still pending",
                    [
                        "card": cardID, "action": action, "reason": change.reasonCode,
                        "tokens": "\(applied.results.count)",
                        "refused": "\(applied.results.filter { $0.statusCode != 0 }.count)",
                    ])
            } catch {
                round.pending += 1
                round.failed += 1
                // A block or opening recorded while this one was being made replaced it: that one is pending now.
                let replaced = (try? store.pendingTokenChange(ofCard: cardID)) != change
                log.warning(
                    replaced
                        ? "pending change of a card's tokens could not be made; a newer change of the card replaced it"
                        : "pending change of a card's tokens could not be made; it stays pending",
                    [
                        "card": cardID, "action": action, "reason": change.reasonCode,
                        "error": (error as? RPCError)?.message ?? "\(error)",
                    ])
            }
        }
        return round
    }
}
