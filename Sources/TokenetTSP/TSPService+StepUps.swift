import TokenetNode
import TokenetWire

extension TSPService {
    /// Deactivates the tokens whose step-up, or whose digitization left pending, outlived `stepUpValidity` and tells
    /// their wallet and issuer app (CARD_STATE DEACTIVATED, STEP_UP_EXPIRED or DIGITIZATION_EXPIRED). The TSP runs
    /// no timer: this runs before every digitization and ID&V call, so an abandoned token can never be activated
    /// late and is gone the next time anyone adds or verifies a card. Inside the state-change gate, so a late
    /// activation and its expiry are told in order. A digitization still asking the issuer (whose deadline may be
    /// set longer than the window) is never taken for one left pending.
    func expireAbandonedStepUps(traceID: String, log: Logger) async throws {
        guard nowMs > configuration.stepUpValidity.milliseconds else { return }
        try await stateChanges.run { try await expireAbandonedStepUpsInTurn(traceID: traceID, log: log) }
    }

    /// `expireAbandonedStepUps` for a caller already in the state-change gate: an activation runs it again in the
    /// turn it activates in, or a token whose window ended while it waited for that turn (behind other changes) was
    /// activated late.
    func expireAbandonedStepUpsInTurn(traceID: String, log: Logger) async throws {
        let validityMs = configuration.stepUpValidity.milliseconds
        let now = nowMs
        guard now > validityMs else { return }
        let asking = configuration.issuerDeadline.milliseconds
        let expired = try store.expireStepUps(
            decidedAtOrBeforeMs: now - validityMs, window: "\(validityMs / 1000) s", traceID: traceID,
            nowMs: now, pendingMadeAtOrBeforeMs: now > asking ? min(now - validityMs, now - asking) : 0)
        for change in expired.value.stepUps {
            log.info(
                "abandoned step-up token deactivated",
                ["digital_card_id": change.after.digitalCardID, "last4": change.after.panLast4])
        }
        for expiry in expired.value.digitizations {
            log.info(
                "digitization left pending ended; its token deactivated",
                [
                    "digital_card_id": expiry.change.after.digitalCardID, "last4": expiry.change.after.panLast4,
                    "request_id": expiry.requestID,
                ])
        }
        await published(expired, log: log)
    }

    /// Tells the parties of tokens a new digitization of their card replaced (CARD_STATE DEACTIVATED, REPLACED,
    /// journaled by `finishDigitization`): the wallet drops the card it showed as waiting for verification.
    func publishReplaced(
        _ finished: Journaled<(response: TspV1.DigitizeResponse, replaced: [TokenStateChange])>,
        by digitalCardID: String, log: Logger
    ) async {
        for change in finished.value.replaced {
            log.info(
                "step-up token replaced by a new digitization of its card",
                ["digital_card_id": change.after.digitalCardID, "replaced_by": digitalCardID])
        }
        await published(finished, log: log)
    }
}
