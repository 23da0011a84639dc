/// Tells the issuer resolver (`WalletIssuerResolver`) that a card was stored without an issuer (the TSP named none
/// at digitization): a resolver with nothing left to recheck reads the store again, so the card starts the rechecks
/// while the node runs instead of waiting for the next start. Signals given while the resolver is busy coalesce into
/// one: it reads every such card at once.
public final class IssuerlessCardSignal: Sendable {
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// A card was stored without an issuer.
    public func cardStored() {
        continuation.yield()
    }
}
