import Synchronization

/// One key-batch request per card at a time. Payments made at once on one card each found it at or below the
/// threshold and each asked the TSP for a batch: 25 payments at once fetched 20 batches where one was due. A request
/// that comes while one is on its way waits for that one's answer instead.
final class ReplenishmentFlights: Sendable {
    private let inFlight = Mutex<[Int64: Task<PaymentKeyCount, any Error>]>([:])

    /// Runs `body` for `card`, or waits for the run already on its way and takes its answer. `body` throws untyped:
    /// with `throws(WalletError)`, a concurrent join on this toolchain never saw its task end.
    func run(card: Int64, _ body: @escaping @Sendable () async throws -> PaymentKeyCount) async throws(WalletError)
        -> PaymentKeyCount
    {
        let task = inFlight.withLock { flights in
            if let running = flights[card] { return running }
            let task = Task<PaymentKeyCount, any Error> {
                defer { _ = self.inFlight.withLock { $0.removeValue(forKey: card) } }
                return try await body()
            }
            flights[card] = task
            return task
        }
        do {
            return try await task.value
        } catch let error as WalletError {
            throw error
        } catch {
            throw WalletError(.unavailable, "the key batch request ended: \(error)")
        }
    }
}
