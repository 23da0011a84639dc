import TokenetNode
import TokenetRPC
import TokenetWire

/// Asks the TSP (`Provisioning.GetTokenIssuer`) whose token each card stored without an issuer is, as
/// `IssuerResolution` decides, and records the answers. Runs in the background when the wallet starts, so a TSP
/// that cannot be reached delays no call the wallet serves; until a card's issuer is recorded it is no issuer app's.
/// Cards the TSP does not know are asked about again every few minutes, then every hour, while the node runs; the
/// log says so once, and the rounds after that log at debug level unless they resolve a card.
struct WalletIssuerResolver: Sendable {
    let tsp: TspV1.Provisioning.Client
    let store: WalletStore
    let events: WalletEventHub
    /// The account of cards stored before the wallet recorded each card's account.
    let configuredAccountID: String
    let logger: Logger
    let clock: @Sendable () -> UInt64
    /// Waits the given milliseconds; throws when the node stops (the task is cancelled).
    let sleep: @Sendable (UInt64) async throws -> Void
    /// Ends a wait early when an issuer app asks for its cards.
    let wakeup: IssuerResolutionWakeup
    /// How long one question may take (`defaultCallTimeout`).
    let callTimeout: Duration
    /// Says when a card was stored without an issuer; without it, `run` returns once nothing is left to ask.
    let storedLater: IssuerlessCardSignal?

    init(
        tsp: any RPCCaller, store: WalletStore, events: WalletEventHub, configuredAccountID: String, logger: Logger,
        clock: @escaping @Sendable () -> UInt64 = WalletNode.nowMs,
        sleep: @escaping @Sendable (UInt64) async throws -> Void = { try await Task.sleep(for: .milliseconds($0)) },
        wakeup: IssuerResolutionWakeup = IssuerResolutionWakeup(), callTimeout: Duration = Self.defaultCallTimeout,
        storedLater: IssuerlessCardSignal? = nil
    ) {
        self.storedLater = storedLater
        self.wakeup = wakeup
        self.callTimeout = callTimeout
        self.tsp = TspV1.Provisioning.Client(tsp)
        self.store = store
        self.events = events
        self.configuredAccountID = configuredAccountID
        self.logger = logger
        self.clock = clock
        self.sleep = sleep
    }

    /// Resolves every card stored without an issuer, until none is left to ask (the TSP named the issuer of each,
    /// or refused to) or the task is cancelled; returns the machine's last state (for tests). With `storedLater`,
    /// it then waits for a card stored without an issuer, which starts the rechecks, until the task is cancelled.
    @discardableResult
    func run() async -> IssuerResolution {
        // Made before the store is read: a card stored while the first round runs is not missed.
        var storedCards = storedLater?.stream.makeAsyncIterator()
        var machine = IssuerResolution()
        let found: [WalletCardRecord]
        do {
            found = try store.cardsAwaitingIssuer()
        } catch {
            logger.warning("the cards without an issuer could not be read", ["error": error.description])
            return machine
        }
        var actions = machine.handle(.start(found.map(card)))
        // The first round says once at info level that the TSP could not be reached, or that an app brought a
        // retry forward; the retries after that are the same story.
        var said = Said()
        while true {
            if actions.isEmpty {
                // Nothing left to ask: a card stored without an issuer from now on starts the rechecks.
                guard storedCards != nil, await storedCards?.next() != nil, !Task.isCancelled else { return machine }
                if let found = try? store.cardsAwaitingIssuer() {
                    actions += machine.handle(.awaiting(found.map(card)))
                }
                continue
            }
            let action = actions.removeFirst()
            switch action {
            case .ask(let card):
                let answer = await ask(card, round: machine.round, said: &said)
                // A stopping node cancelled the call: its failure says nothing about the TSP.
                if Task.isCancelled { return machine }
                actions += machine.handle(answer)
            case .record(let id, let issuerID, let nodeID):
                actions += machine.handle(record(id, issuerID: issuerID, issuerNodeID: nodeID))
            case .wait(let milliseconds):
                do {
                    if try await wakeup.wait(milliseconds, sleep: sleep) {
                        logger.log(
                            machine.round == 0 && !said.appAsked ? .info : .debug,
                            "an issuer app asked for its cards; asking the TSP for the card's issuer now", [:])
                        said.appAsked = true
                    }
                } catch {
                    return machine
                }
                actions += machine.handle(.retryDue)
            case .recheckLater(let rest, let wait, let round, let cards):
                // Said once at info level; the rounds after that are the same story.
                logger.log(
                    round == 1 ? .info : .debug,
                    "the TSP does not know some cards stored without an issuer; asking again later",
                    ["cards": "\(cards)", "round": "\(round)", "in_s": "\((rest + wait) / 1000)"])
                do {
                    try await sleep(rest)
                    if try await wakeup.wait(wait, sleep: sleep) {
                        logger.debug("an issuer app asked for its cards; asking the TSP again now")
                    }
                } catch {
                    return machine
                }
                // Cards stored without an issuer since the start are asked about in this round too.
                if let found = try? store.cardsAwaitingIssuer() {
                    actions += machine.handle(.awaiting(found.map(card)))
                }
                actions += machine.handle(.recheckDue)
            case .finish(let resolved, let remaining):
                // Counts only: the cards' numbers are never logged, not even masked.
                guard resolved + remaining > 0 else { break }
                logger.info(
                    "issuers of cards stored without one",
                    ["resolved": "\(resolved)", "remaining": "\(remaining)"])
            }
        }
    }

    /// What the first round has logged at info level already.
    private struct Said {
        var unreachable = false
        var appAsked = false
    }

    private func card(_ record: WalletCardRecord) -> IssuerResolution.Card {
        IssuerResolution.Card(
            cardID: record.id, digitalCardID: record.result?.digitalCardID ?? "",
            walletAccountID: record.account(configured: configuredAccountID))
    }

    /// Asks the TSP for the card's issuer. Only the first round logs NOT_FOUND or a failure at warning or info
    /// level, and a failure only once: the retries and rounds after it ask about the same cards again. Any other
    /// refusal is news in every round.
    private func ask(_ card: IssuerResolution.Card, round: Int, said: inout Said) async -> IssuerResolution.Event {
        do {
            let answer = try await tsp.getTokenIssuer(
                TspV1.GetTokenIssuerRequest(digitalCardID: card.digitalCardID, walletAccountID: card.walletAccountID),
                options: CallOptions(timeout: callTimeout))
            return .answered(cardID: card.cardID, issuerID: answer.issuerID, issuerNodeID: answer.issuerNodeID)
        } catch let error as RPCError where Self.isRefusal(error.code) {
            let notFound = error.code == .notFound
            logger.log(
                round == 0 || !notFound ? .warning : .debug,
                notFound
                    ? "the TSP does not know a card; no issuer app sees it until the TSP names its issuer"
                    : "the TSP names no issuer for a card; it stays hidden from every issuer app",
                [
                    "card_ref": WalletCardRecord.ref(card.cardID), "digital_card_id": card.digitalCardID,
                    "code": error.code.protoValueName ?? "\(error.code.rawValue)", "error": error.message,
                ])
            return notFound ? .notFound(cardID: card.cardID) : .refused(cardID: card.cardID)
        } catch {
            if Task.isCancelled { return .unreachable(cardID: card.cardID) }
            logger.log(
                round == 0 && !said.unreachable ? .info : .debug,
                "the TSP could not name a card's issuer; asking again later",
                ["card_ref": WalletCardRecord.ref(card.cardID), "error": "\(error)"])
            said.unreachable = said.unreachable || round == 0
            return .unreachable(cardID: card.cardID)
        }
    }

    /// How long one question may take: a TSP that accepts the call and never answers is asked again later, like
    /// one that cannot be reached, instead of holding the resolution forever.
    static let defaultCallTimeout: Duration = .seconds(30)

    /// Answers that asking again at once will not change: the TSP does not hold the token for this wallet account
    /// (NOT_FOUND, asked again in a later round), or refuses the question itself.
    static func isRefusal(_ code: StatusCode) -> Bool {
        [.notFound, .permissionDenied, .invalidArgument, .failedPrecondition].contains(code)
    }

    private func record(_ id: Int64, issuerID: String, issuerNodeID: String) -> IssuerResolution.Event {
        do {
            let stored = try store.recordIssuer(id: id, issuerID: issuerID, issuerNodeID: issuerNodeID, nowMs: clock())
            if let result = stored.result, stored.issuerNodeID != nil {
                // A listening issuer app hears of the card as if it had just been added: it was hidden until now.
                events.publish(
                    WalletV1.WalletEvent(
                        kind: .tokenizedCardAdded, walletAccountID: stored.account(configured: configuredAccountID),
                        digitalCardID: result.digitalCardID, tokenState: result.tokenState, atMs: clock()),
                    cardIssuerNodeID: stored.issuerNodeID)
            }
            logger.info(
                "card issuer recorded",
                ["card_ref": stored.cardRef, "issuer_id": issuerID, "last4": stored.panLast4])
            return .recorded(cardID: id)
        } catch {
            logger.warning(
                "a card's issuer could not be recorded",
                ["card_ref": WalletCardRecord.ref(id), "error": error.description])
            return .notRecorded(cardID: id)
        }
    }
}
