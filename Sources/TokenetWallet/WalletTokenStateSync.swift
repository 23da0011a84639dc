import TokenetNode
import TokenetRPC
import TokenetWire

/// Brings the wallet's token states in line with the TSP's (`GetTokenStates`) each time the notification stream
/// opens, after resuming the digitizations whose answer the wallet never got. The broker keeps a message for a
/// wallet that is away only so long (its retention); a CARD_STATE message it dropped unread left the card showing a
/// state its token had left, for good: a card the issuer resumed stayed SUSPENDED here, and could neither pay nor be
/// resumed. A dropped CARD_RENEWAL left the renewed card's old last four digits, which the listing carries too.
///
/// Each state goes through `WalletTokenUpdates.apply` with its version, so a state the wallet already holds at that
/// version or a later one (a notification or an answer that came first) is kept, and a change is announced to the
/// issuer apps as a notification's is. Streams that open while a check is under way coalesce into one more check.
struct WalletTokenStateSync: Sendable {
    let tsp: TspV1.TokenLifecycle.Client
    let store: WalletStore
    let updates: WalletTokenUpdates
    let signal: StreamOpenedSignal
    let logger: Logger
    /// Sends again the Digitize requests the wallet never got an answer to
    /// (`WalletControlService.resumeUnansweredDigitizations`), before each check: a card whose answer was lost to a
    /// stop of this node showed DIGITIZING for good, while the TSP held its token.
    var resumeDigitizations: (@Sendable () async -> Void)?
    /// Waits the given milliseconds before a check that failed is tried again; throws when the node stops.
    var sleep: @Sendable (UInt64) async throws -> Void = { try await Task.sleep(for: .milliseconds($0)) }

    /// How long one page may take: a TSP that holds the call must not hold the next check back for ever.
    static let pageWait = Duration.seconds(30)

    /// Checks once per signal until the task is cancelled (the node stops).
    func run() async {
        await signal.checkEachTime(
            sleep: sleep, opened: { await resumeDigitizations?() },
            check: { () async throws(WalletError) in try await check() },
            failed: { error, failuresBefore in
                let message = (error as? WalletError)?.message ?? "\(error)"
                // A TSP that does not offer the call (an older build) is not asked again until the next stream.
                if (error as? WalletError)?.code == .failedPrecondition {
                    logger.warning("token states could not be checked with the TSP", ["error": message])
                    return .waitForNextStream
                }
                if failuresBefore == 0 {
                    logger.warning("token states could not be checked with the TSP; trying again", ["error": message])
                }
                return .retry
            })
    }

    /// Reads every page of the TSP's listing and applies each state the wallet does not hold yet; returns how many
    /// of the wallet's cards were checked and how many changed (a card whose state and last four digits both
    /// changed counts once).
    @discardableResult
    func check() async throws(WalletError) -> (checked: Int, changed: Int) {
        var pageToken = ""
        var checked = 0
        var changed: Set<String> = []
        /// Cards held in another state than the TSP listed, at the same version or a higher one: asked about again
        /// below.
        var ahead: [String] = []
        repeat {
            let page = try await states(TspV1.GetTokenStatesRequest(pageToken: pageToken))
            for token in page.tokens {
                // A token the wallet holds no card of (its Digitize answer never arrived) has nothing to correct.
                guard let card = try store.card(digitalCardID: token.digitalCardID), let held = card.result else {
                    continue
                }
                checked += 1
                if try renew(card, to: token.panLast4) { changed.insert(token.digitalCardID) }
                // A state no token can be in is left out, and the others are still checked: thrown, it ended the
                // whole check at that token, at every stream.
                guard WalletTokenUpdates.isKnown(token.tokenState) else {
                    logger.warning(
                        "the TSP listed a token state this wallet does not know; the card keeps its state",
                        [
                            "card_ref": card.cardRef, "digital_card_id": token.digitalCardID,
                            "state": token.tokenState.protoValueName ?? "number \(token.tokenState.rawValue)",
                        ])
                    continue
                }
                if token.tokenState != held.tokenState, token.stateVersion <= held.stateVersion,
                    held.tokenState != .deactivated
                {
                    ahead.append(token.digitalCardID)
                }
                guard token.tokenState != held.tokenState, token.stateVersion > held.stateVersion else { continue }
                let stored = try updates.apply(token.tokenState, version: token.stateVersion, to: card)
                guard stored.result?.tokenState == token.tokenState else { continue }
                changed.insert(token.digitalCardID)
                logger.info(
                    "token state brought in line with the TSP",
                    [
                        "card_ref": card.cardRef, "digital_card_id": token.digitalCardID,
                        "from": held.tokenState.protoValueName ?? "?", "to": token.tokenState.protoValueName ?? "?",
                    ])
            }
            pageToken = page.nextPageToken
        } while !pageToken.isEmpty
        changed.formUnion(try await takeTheTSPsState(of: ahead))
        logger.info("token states checked with the TSP", ["cards": "\(checked)", "changed": "\(changed.count)"])
        return (checked, changed.count)
    }

    /// The TSP gives every state its version, one state to each, so a card held in another state than the TSP's at
    /// the same version or a higher one holds a state the TSP never made: one an issuer app claimed (its answer to
    /// an in-app activation names the token's state), taken without a version of the TSP's. The wallet showed ACTIVE
    /// a token the TSP held INACTIVE, and no notification or check corrected it. Asked again, so that a change the listing missed (made while it was read) is not taken for one: a card
    /// still ahead of the TSP takes the TSP's state and version. Returns the cards that changed.
    private func takeTheTSPsState(of ids: [String]) async throws(WalletError) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        let again = try await states(TspV1.GetTokenStatesRequest(digitalCardIds: ids))
        var changed: Set<String> = []
        for token in again.tokens {
            guard let card = try store.card(digitalCardID: token.digitalCardID), let held = card.result,
                WalletTokenUpdates.isKnown(token.tokenState),
                held.tokenState != .deactivated, token.tokenState != held.tokenState,
                token.stateVersion <= held.stateVersion
            else { continue }
            let stored = try updates.apply(token.tokenState, version: token.stateVersion, to: card, overriding: true)
            guard stored.result?.tokenState == token.tokenState else { continue }
            changed.insert(token.digitalCardID)
            logger.warning(
                "card held a state the TSP never gave it; the TSP's state taken",
                [
                    "card_ref": card.cardRef, "digital_card_id": token.digitalCardID,
                    "held": held.tokenState.protoValueName ?? "?", "held_version": "\(held.stateVersion)",
                    "to": token.tokenState.protoValueName ?? "?", "version": "\(token.stateVersion)",
                ])
        }
        return changed
    }

    /// The TSP's answer to `request`, within `pageWait`.
    private func states(_ request: TspV1.GetTokenStatesRequest) async throws(WalletError)
        -> TspV1.GetTokenStatesResponse
    {
        do {
            // Within the served call's time too, less room for its answer, when `wallet sync` runs the check.
            let timeout = CallOptions.answeringInTime.timeout.map { min($0, Self.pageWait) } ?? Self.pageWait
            return try await tsp.getTokenStates(request, options: CallOptions(timeout: timeout))
        } catch let error as RPCError {
            throw WalletError(WalletTokenUpdates.code(of: error), "the TSP's GetTokenStates failed: \(error.message)")
        } catch {
            throw WalletError(.unavailable, "the TSP's GetTokenStates failed: \(error)")
        }
    }

    /// Shows the last four digits the TSP holds for the card behind a token, when a renewal whose CARD_RENEWAL
    /// message was dropped changed them; true when the card changed.
    private func renew(_ card: WalletCardRecord, to panLast4: String) throws(WalletError) -> Bool {
        guard panLast4 != card.panLast4, panLast4.utf8.count == 4,
            panLast4.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            try store.renewCard(id: card.id, panLast4: panLast4, nowMs: updates.clock())
        else { return false }
        logger.info(
            "card's last four digits brought in line with the TSP",
            ["card_ref": card.cardRef, "previous_pan_last4": card.panLast4, "pan_last4": panLast4])
        return true
    }
}
