/// Tells a node's check with the TSP (the wallet's token states, the issuer's tokens) that its notification stream
/// opened (`NotificationHandler.streamOpened`), for what the broker's retention may have dropped while it was away.
/// Signals given while a check is under way coalesce into one more check.
public final class StreamOpenedSignal: Sendable {
    public let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    public func streamOpened() {
        continuation.yield()
    }
}
