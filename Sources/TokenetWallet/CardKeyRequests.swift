import TokenetNode

/// One key-batch request per card at a time. Payments made at once on one card each found it at or below the
/// threshold and each asked the TSP for a batch: 25 payments at once fetched 20 batches where one was due. A payment
/// that comes while a request for its card is on its way waits for it to end, then finds the batch it brought and
/// asks for none. The request runs in the task of the payment that made it, so cancelling that payment cancels its
/// call to the TSP as before.
final class CardKeyRequests: Sendable {
    private let turns = KeyedTurns<Int64>()

    /// Runs `body` once no other request for `card` is on its way. A task cancelled while it waits throws
    /// UNAVAILABLE without running `body`.
    func one<T>(card: Int64, _ body: () async throws -> T) async throws -> T {
        try await turns.one(
            card,
            cancelled: WalletError(.unavailable, "the payment was cancelled while another took the card's key batch"),
            body)
    }
}
