import TokenetNode
import TokenetWire

/// A payment that asks for authentication (AUTHN) waits for the cardholder's answer in the issuer app for
/// `TSPConfiguration.authnLifetime`. One nobody answers by then is declined here, and its wallet and issuer app are
/// told with a TRANSACTION_NOTIFICATION (approved false, `authn_status` EXPIRED), as they are of an answer: without
/// it the wallet showed the payment waiting for good, since nothing else ever told it the payment's fate.
extension TSPService {
    /// The most payments one sweep transaction declines; a sweep goes on with the next batch until none are due.
    static let authnExpiryBatch = 100

    /// Declines every payment whose AUTHN was still unanswered at its expiry, tells their parties, and returns how
    /// many there were.
    @discardableResult
    func expireDueAuthns(log: Logger) async throws -> Int {
        let now = nowMs
        var declined = 0
        while true {
            let expired = try store.expireAuthns(
                nowMs: now, limit: Self.authnExpiryBatch,
                announce: { expired in
                    expired.map { transaction in
                        // The last call on the token is this decline, now; the payment keeps its own time.
                        TransactionsService.announcement(of: transaction, lastCallMs: now)
                    }
                })
            for transaction in expired.value {
                log.info(
                    "authentication request expired; payment declined",
                    [
                        "authn_request_id": transaction.authnRequestID, "transaction_id": transaction.transactionID,
                        "digital_card_id": transaction.digitalCardID,
                    ])
            }
            // A sweep that declined nothing publishes nothing: the journal's backlog is its retry's to publish.
            guard !expired.value.isEmpty else { return declined }
            await published(expired, log: log)
            declined += expired.value.count
            if expired.value.count < Self.authnExpiryBatch { return declined }
        }
    }

    /// How often the node looks for expired AUTHN requests: a payment is declined at most this long after its
    /// request expired (answers in between are refused as late all the same).
    static let authnSweepInterval = Duration.seconds(1)

    /// Runs `expireDueAuthns` every `authnSweepInterval` until cancelled (the node's stop). A sweep that fails (a
    /// full disk, a database file deleted) is tried again at the next one. The failure is logged once while it
    /// lasts, not every second (a deleted data directory filled the log with the same line), and its end is logged
    /// with the number of sweeps that failed.
    func expireAuthnsUntilCancelled(every interval: Duration = authnSweepInterval) async {
        var failing: (error: String, sweeps: Int)?
        while true {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            do {
                try await expireDueAuthns(log: logger)
                if let failing {
                    logger.info(
                        "expired authentication requests are declined again", ["failed_sweeps": "\(failing.sweeps)"])
                }
                failing = nil
            } catch {
                let text = "\(error)"
                if let known = failing, known.error == text {
                    failing?.sweeps += 1
                    continue
                }
                logger.warning(
                    "cannot decline expired authentication requests; tried again every second, logged again only "
                        + "when the error changes", ["error": text])
                failing = (text, 1)
            }
        }
    }

    /// How often the node forgets card security codes no longer needed and deletes card data that expired unused
    /// (`TSPStore.forgetSpentCardData`); the first sweep runs at start.
    static let cardDataSweepInterval = Duration.seconds(60)

    /// Sweeps card data every `cardDataSweepInterval` until cancelled (the node's stop), each sweep in batches until
    /// nothing is left. A sweep that fails is logged and tried again at the next one.
    func forgetSpentCardDataUntilCancelled(every interval: Duration = cardDataSweepInterval) async {
        while !Task.isCancelled {
            do {
                var total = TSPStore.CardDataSweep()
                while true {
                    let sweep = try store.forgetSpentCardData(nowMs: nowMs)
                    total.securityCodesForgotten += sweep.securityCodesForgotten
                    total.expiredDeleted += sweep.expiredDeleted
                    if sweep.securityCodesForgotten + sweep.expiredDeleted == 0 || Task.isCancelled { break }
                    await Task.yield()
                }
                if total != TSPStore.CardDataSweep() {
                    logger.info(
                        "card data no longer needed was forgotten",
                        [
                            "security_codes": "\(total.securityCodesForgotten)",
                            "expired_deleted": "\(total.expiredDeleted)",
                        ])
                }
            } catch {
                logger.warning("cannot forget spent card data", ["error": "\(error)"])
            }
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
        }
    }
}
