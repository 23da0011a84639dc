import TokenetNode
import TokenetRPC
import TokenetWire

extension TSPService {
    /// Deactivates the tokens whose step-up, or whose digitization left pending, outlived `stepUpValidity` and tells
    /// their wallet and issuer app (CARD_STATE DEACTIVATED, STEP_UP_EXPIRED or DIGITIZATION_EXPIRED). This runs
    /// before every digitization and ID&V call, so an abandoned token can never be activated late, and on the
    /// node's own sweep (`expireStepUpsUntilCancelled`), so that a quiet sandbox tells its parties too. Inside the
    /// state-change gate, so a late activation and its expiry are told in order. A digitization still asking the
    /// issuer (whose deadline may be set longer than the window) is never taken for one left pending.
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

    /// How often the node looks for abandoned step-ups on its own: a tenth of `stepUpValidity`, at least every
    /// minute and at most every second. A token is deactivated at most that long after its window ended (a call
    /// about it meanwhile finds it ended all the same).
    var stepUpSweepInterval: Duration {
        min(max(configuration.stepUpValidity / 10, .seconds(1)), .seconds(60))
    }

    /// Runs `expireAbandonedStepUps` every `stepUpSweepInterval` until cancelled (the node's stop): without it, a
    /// token nobody verified stayed INACTIVE, and its parties were told nothing, until some other card was added
    /// or verified. A sweep that fails is tried again at the next one; the failure is logged once while it lasts.
    func expireStepUpsUntilCancelled() async {
        var failing: String?
        while true {
            do {
                try await Task.sleep(for: stepUpSweepInterval)
            } catch {
                return
            }
            let traceID = Metadata.newTraceID()
            do {
                try await expireAbandonedStepUps(traceID: traceID, log: logger.withTraceID(traceID))
                if failing != nil { logger.info("abandoned step-ups are deactivated again") }
                failing = nil
            } catch {
                let text = "\(error)"
                guard failing != text else { continue }
                logger.warning(
                    "cannot deactivate abandoned step-ups; tried again at each sweep, logged again only when the "
                        + "error changes", ["error": text])
                failing = text
            }
        }
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
