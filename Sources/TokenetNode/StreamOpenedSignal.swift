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

extension StreamOpenedSignal {
    /// What a failed check leads to.
    public enum AfterFailure: Sendable {
        /// Tried again after the next of `retryWaitsMs`.
        case retry
        /// Not tried again until the stream opens again (a TSP that does not offer the call).
        case waitForNextStream
    }

    /// The waits before a failed check is tried again grow from the first to the last, which then repeats.
    public static let retryWaitsMs: [UInt64] = [1_000, 5_000, 30_000, 60_000]

    /// Runs `opened`, then `check`, once per signal until the task is cancelled (the node stops); a check that
    /// throws is handed to `failed` with the number of failures before it, and tried again after `sleep` for
    /// the next wait unless `failed` says to wait for the next stream. A `sleep` that throws, or a check that fails
    /// once the task is cancelled (the node stops), ends it.
    public func checkEachTime(
        sleep: @Sendable (UInt64) async throws -> Void, opened: () async -> Void = {},
        check: () async throws -> Void, failed: (any Error, _ failuresBefore: Int) -> AfterFailure
    ) async {
        for await _ in stream {
            await opened()
            var failures = 0
            while !Task.isCancelled {
                do {
                    try await check()
                    break
                } catch {
                    // Cut short because the node stops: no failure to report ("trying again" it will not).
                    if Task.isCancelled { return }
                    guard failed(error, failures) == .retry else { break }
                    let wait = Self.retryWaitsMs[min(failures, Self.retryWaitsMs.count - 1)]
                    failures += 1
                    do { try await sleep(wait) } catch { return }
                }
            }
        }
    }
}
