import Foundation
import Synchronization
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

/// The wallet party: the wallet app's control service (operator role) and the wallet provider's push backend
/// (issuer role), both calling the TSP's provisioning API.
public enum WalletNode {
    public static let databaseFileName = "wallet.sqlite"

    /// The services `wallet-node` serves, with its database in the data directory and a channel to `--tsp`.
    public static func services(_ context: NodeContext) throws(NodeError) -> RPCRouter {
        let configuration = try WalletConfiguration.load(fromDirectory: context.dataDirectory)
        let configurationPath = WalletConfiguration.path(inDirectory: context.dataDirectory)
        let configured = FileManager.default.fileExists(atPath: configurationPath)
        let path = (context.dataDirectory as NSString).appendingPathComponent(databaseFileName)
        let store: WalletStore
        do {
            store = try WalletStore.open(path: path)
        } catch {
            // The message already names the database; the cause says what went wrong with it (once).
            // A database it may not write, one SQLite finds damaged, or one whose schema is not what this build
            // expects (a table missing, a newer version), is the operator's to fix before a restart can help:
            // status 2, like other configuration mistakes.
            let code = (error.cause as? StorageError)?.code
            let config = code == .readOnly || code == .corrupt || code == .schema || code == .open
            throw NodeError(config ? .config : .io, error.message, cause: error.cause)
        }
        context.whenCallsEnd { store.database.refuseChanges(because: NodeContext.stoppingRefusal) }
        context.closeWhenStopped("the wallet database") { try store.database.close() }
        if let change = store.schemaChange {
            context.logger.info(change.message, change.fields(path: store.database.path))
        }
        let tsp = try context.channel(to: .tsp)
        let selection: WalletSelection
        do {
            selection = try WalletSelection(store: store, configuredAccountID: configuration.walletAccountID)
        } catch {
            throw NodeError(.io, error.message, cause: error.cause)
        }
        context.logger.info(
            "wallet ready",
            [
                // The active account is the configured one until the person makes another active (use-account).
                "wallet_account": selection.activeWalletAccountID,
                "configured_wallet_account": configuration.walletAccountID, "device": configuration.device.deviceID,
                "risk": "\(configuration.risk.accountScore)/\(configuration.risk.deviceScore)",
                "config": configured ? configurationPath : "defaults (no \(WalletConfiguration.fileName))",
            ])
        // The TSP's notifications, handled by the wallet (token states, transactions, messages, payment keys).
        let issuer = context.options.peers[.issuer] == nil ? nil : try context.channel(to: .issuer)
        let handler = Mutex<(any NotificationHandler)?>(nil)
        let router = router(
            tsp: tsp, store: store, configuration: configuration, selection: selection, logger: context.logger,
            issuer: issuer,
            notifications: { made in handler.withLock { $0 = made } }, keysAtActivation: context.outgoing)
        if let handler = handler.withLock({ $0 }) {
            try context.subscribeToNotifications(handler: handler)
        }
        return router
    }

    /// The router for given peers, storage and the person's choices (kept in `store`); tests pass fakes of the TSP.
    public static func router(
        tsp: any RPCCaller, store: WalletStore, configuration: WalletConfiguration, selection: WalletSelection,
        logger: Logger,
        clock: @escaping @Sendable () -> UInt64 = nowMs,
        newID: @escaping @Sendable () -> String = IdentifierRules.newID,
        events: WalletEventHub = WalletEventHub(), issuer: (any RPCCaller)? = nil,
        notifications: ((any NotificationHandler) -> Void)? = nil, keysAtActivation background: NodeOutgoing? = nil
    ) -> RPCRouter {
        var router = RPCRouter()
        let issuerResolution = IssuerResolutionWakeup()
        // Only a resolver running in the background hears of cards stored without an issuer.
        let issuerless = background == nil ? nil : IssuerlessCardSignal()
        let updates = WalletTokenUpdates(
            tsp: TspV1.TokenLifecycle.Client(tsp), store: store, events: events,
            configuredAccountID: configuration.walletAccountID, logger: logger, clock: clock)
        WalletLifecycleService(
            tsp: tsp, store: store, updates: updates, logger: logger,
            refillWait: configuration.refillWaitAfterPayment
        ).register(on: &router)
        var control = WalletControlService(
            tsp: tsp, store: store, configuration: configuration, selection: selection, logger: logger, clock: clock,
            newID: newID, events: events, issuerless: issuerless)
        let opened = background == nil ? nil : StreamOpenedSignal()
        control.tokenSync = WalletTokenStateSync(
            tsp: TspV1.TokenLifecycle.Client(tsp), store: store, updates: updates,
            signal: opened ?? StreamOpenedSignal(), logger: logger)
        notifications?(
            WalletNotificationHandler(store: store, updates: updates, logger: logger, clock: clock, opened: opened))
        if let background {
            // Checks the token states with the TSP each time the notification stream opens.
            if var sync = control.tokenSync {
                sync.resumeDigitizations = { [control] in await control.resumeUnansweredDigitizations() }
                background.run { [sync] in await sync.run() }
            }
            // Issues a card's first payment keys when it turns ACTIVE, until the node stops.
            let keys = PaymentKeysAtActivation(store: store, updates: updates, logger: logger)
            background.run { await keys.run(events) }
            // Asks again, every minute, for the batches payments asked for and did not get.
            let topUp = PaymentKeysTopUp(store: store, updates: updates, logger: logger)
            background.run { await topUp.run() }
            // Names the issuer of each card stored before the wallet recorded issuers, asking the TSP in the
            // background: the wallet is ready at once, and a TSP that is down is asked again until it answers.
            let resolver = WalletIssuerResolver(
                tsp: tsp, store: store, events: events, configuredAccountID: configuration.walletAccountID,
                logger: logger, clock: clock, wakeup: issuerResolution, storedLater: issuerless)
            background.run { await resolver.run() }
        }
        control.register(on: &router)
        WalletPushService(tsp: tsp, selection: selection, logger: logger).register(on: &router)
        WalletIdvService(
            tsp: tsp, store: store, logger: logger, clock: clock, events: events,
            configuredAccountID: configuration.walletAccountID
        ).register(on: &router)
        WalletEventsService(
            hub: events, store: store, selection: selection, logger: logger, issuerResolution: issuerResolution
        ).register(on: &router)
        WalletSelectionService(selection: selection, store: store, events: events, clock: clock).register(on: &router)
        WalletAppToAppService(
            store: store, issuer: issuer, provider: configuration.provider, logger: logger, clock: clock,
            events: events, configuredAccountID: configuration.walletAccountID
        ).register(on: &router)
        return router
    }

    /// Unix time in milliseconds.
    @Sendable public static func nowMs() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }
}
