import TokenetRPC

/// Without a retry, a message the broker could not take waits for the next journaled change, or the next start:
/// hours on a quiet TSP. The node runs this loop in the background; it drains the journal after each failure,
/// with growing, capped delays, until the journal is no longer backlogged.
extension NotificationJournal {
    /// The delays between drains: 1 s, doubling up to 1 min while the broker keeps failing (one TSP: no jitter).
    static let retryBackoff = RPCChannel.Backoff(
        initial: .seconds(1), maximum: .seconds(60), multiplier: 2, jitter: 0)

    /// Drains the backlogged journal after every failure until the task is cancelled (the node stops).
    func retryUntilCancelled(
        backoff: RPCChannel.Backoff = NotificationJournal.retryBackoff,
        sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) async {
        for await _ in failed {
            var attempt = 0
            while isBacklogged {
                attempt += 1
                do {
                    try await sleep(backoff.delay(beforeAttempt: attempt))
                } catch {
                    return
                }
                guard !Task.isCancelled else { return }
                if await drain(log: logger) {
                    logger.info("journaled notifications published on retry", ["attempt": "\(attempt)"])
                }
            }
        }
    }
}
