import Synchronization
import TokenetNode
import TokenetRPC
import TokenetWire

/// The issuer app's connection to the wallet: on each (re)connection it pulls the current token states, then keeps
/// the card-data-changed listener open and applies its events, reconnecting after a pause when the listener ends
/// (the wallet went away, or dropped the app for falling behind).
public struct IssuerAppLink: Sendable {
    let wallet: WalletV1.WalletEvents.Client
    let view: IssuerAppView
    let logger: Logger
    let retryAfter: Duration
    let sleep: @Sendable (Duration) async throws -> Void
    /// Whether the node is still starting (`NodeOutgoing.isStarting`): a wallet not up yet is then said at info
    /// level, and the warning waits for a failure after the start.
    let isStarting: @Sendable () -> Bool
    /// Whether the failures since the listener last pulled were said at warning level.
    private let warnedOfFailure = WarnedFlag()

    public init(
        wallet: any RPCCaller, view: IssuerAppView, logger: Logger, retryAfter: Duration = .seconds(1),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        isStarting: @escaping @Sendable () -> Bool = { false }
    ) {
        self.wallet = WalletV1.WalletEvents.Client(wallet)
        self.view = view
        self.logger = logger
        self.retryAfter = retryAfter
        self.sleep = sleep
        self.isStarting = isStarting
    }

    private final class WarnedFlag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// Listens until the task is cancelled. Only the first failure in a row is a warning, so a wallet that is down
    /// for a while does not fill the log with one line per retry.
    public func run() async {
        var failedBefore = false
        while !Task.isCancelled {
            failedBefore = !(await listenOnce(quiet: failedBefore))
            do { try await sleep(retryAfter) } catch { return }
        }
    }

    /// One connection: open the listener, pull, then apply events until the stream ends. The listener is opened
    /// first so that a change made around the pull still arrives as an event, applied after the pulled states.
    /// Returns false when the connection failed before the pull, or the wallet ended it by stopping.
    @discardableResult
    func listenOnce(quiet: Bool = false) async -> Bool {
        var pulled = false
        do {
            let stream = try await wallet.listen(WalletV1.ListenRequest())
            // A flow of its own, whose line here and the wallet's lines for its calls share its trace id; the events
            // after it carry their own flows' ids.
            try await FlowTrace.runAsNewFlow {
                let pull = try await wallet.allCurrentTokens()
                view.update {
                    $0.apply(pull: pull)
                    $0.listening = true
                }
                pulled = true
                warnedOfFailure.value.store(false, ordering: .relaxed)
                logger.info("app view pulled from the wallet", ["tokens": "\(pull.tokens.count)"])
            }
            for try await event in stream {
                view.update { $0.apply(event: event) }
            }
            view.update { $0.listening = false }
            if Task.isCancelled {
                // A cancelled stream can end without an error.
                logger.debug("app listener to the wallet closed: the node is stopping")
            } else {
                logger.info("the wallet closed the app's listener")
            }
        } catch {
            view.update { $0.listening = false }
            if Task.isCancelled {
                logger.debug("app listener to the wallet closed: the node is stopping")
            } else if (error as? RPCError)?.isStreamEndedByShutdown == true {
                // The wallet is stopping, cleanly: not this node's failure, as a warning with "the node is shutting
                // down" read.
                logger.info("the wallet is stopping; the app's listener is opened again when it is back")
                // Said once: the retries while it is down are quiet, as after any failure.
                pulled = false
            } else if !pulled, isStarting(), (error as? RPCError)?.mayBeAPeerStillStarting == true {
                // A wallet not up yet while this node starts (parties started together): once, at info.
                if quiet {
                    logger.debug("app listener to the wallet failed again", ["error": "\(error)"])
                } else {
                    logger.info(
                        "the wallet cannot be listened to yet (it may still be starting); trying again",
                        ["error": "\(error)"])
                }
            } else if pulled || !quiet || !warnedOfFailure.value.load(ordering: .relaxed) {
                warnedOfFailure.value.store(true, ordering: .relaxed)
                logger.warning("app listener to the wallet failed", ["error": "\(error)"])
            } else {
                logger.debug("app listener to the wallet failed again", ["error": "\(error)"])
            }
        }
        return pulled
    }
}

/// `IssuerApp.CardView`: the app view for operators.
public struct IssuerAppService: IssuerV1.IssuerApp.ServiceProtocol {
    let view: IssuerAppView

    public init(view: IssuerAppView) {
        self.view = view
    }

    public func cardView(_ request: IssuerV1.CardViewRequest, context: ServerContext) async throws
        -> IssuerV1.CardViewResponse
    {
        view.snapshot.response
    }
}
