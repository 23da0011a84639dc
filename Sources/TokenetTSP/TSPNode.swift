import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

/// The token service provider node: provisioning for wallets, registration and push receipts for issuers, and
/// token listings for operators.
///
/// Policy (defaults; `tsp-policy.json` in the data directory changes them): eligibility receipts live 10 minutes,
/// push receipts and push sessions 15 minutes, each usable once. The issuer has 5 seconds to answer. If it cannot
/// decide a digitization in time, the stand-in approves only when the wallet recommends approval and both risk
/// scores are at most 2, and declines otherwise (`decided_by = "stand-in"`). If it cannot answer an eligibility
/// check, the TSP's own checks stand and the issuer (or the stand-in) decides at digitization. T&C are offered in
/// English and Spanish, English for every other language.
public enum TSPNode {
    /// The services `tsp-node` serves, with storage in `<data dir>/tsp.sqlite`, keys in `<data dir>/keys` and
    /// policy from `<data dir>/tsp-policy.json` when present.
    public static func services(_ context: NodeContext) throws(NodeError) -> RPCRouter {
        try services(context, configuration: TSPConfiguration.load(dataDirectory: context.dataDirectory))
    }

    public static func services(
        _ context: NodeContext, configuration: TSPConfiguration, accessTokens: (any AccessTokenVerifier)? = nil
    ) throws(NodeError) -> RPCRouter {
        try services(context, configuration: configuration, accessTokens: accessTokens, notifications: nil)
    }

    /// The node's startup as `tsp-node` runs it; `notifications` (tests) stands in for the broker as publisher, so
    /// a test can see what the node's own background work (the journal's retry) publishes.
    static func services(
        _ context: NodeContext, configuration: TSPConfiguration, accessTokens: (any AccessTokenVerifier)?,
        notifications: (any NotificationPublishing)?
    ) throws(NodeError) -> RPCRouter {
        let fallback: (any RPCCaller)?
        if context.options.peers[.issuer] != nil {
            fallback = try context.channel(to: .issuer)
        } else {
            fallback = nil
            if context.options.issuerRoutes.isEmpty {
                context.logger.warning("no --issuer given: every digitization is decided by the stand-in rule")
            }
        }
        var routes: [String: any RPCCaller] = [:]
        for (id, address) in context.options.issuerRoutes.sorted(by: { $0.key < $1.key }) {
            routes[id] = try context.channel(to: .issuer, at: address)
            context.logger.info("issuer address", ["issuer": id, "address": address.description])
        }
        return try services(
            dataDirectory: context.dataDirectory, issuers: IssuerDirectory(routes: routes, fallback: fallback),
            logger: context.logger, configuration: configuration, notifications: notifications,
            accessTokens: accessTokens, resources: context.resources, runInBackground: context.runInBackground)
    }

    /// The services over explicit parts: tests pass an in-memory issuer, a clock and an access-token verifier of
    /// their own. Without one, the TSP's own authentication service verifies access tokens.
    public static func services(
        dataDirectory: String, issuer: any RPCCaller, issuerRoutes: [String: any RPCCaller] = [:], logger: Logger,
        configuration: TSPConfiguration = TSPConfiguration(), now: @escaping @Sendable () -> Date = { Date() },
        notifications: (any NotificationPublishing)? = nil, accessTokens: (any AccessTokenVerifier)? = nil
    ) throws(NodeError) -> RPCRouter {
        try services(
            dataDirectory: dataDirectory, issuers: IssuerDirectory(routes: issuerRoutes, fallback: issuer),
            logger: logger, configuration: configuration, now: now, notifications: notifications,
            accessTokens: accessTokens)
    }

    /// With `resources`, the node's stop commits the notifications still pending and closes the database; with
    /// `runInBackground`, the journal's retry and the AUTHN expiry run until the node stops (cancelled before the
    /// database closes).
    static func services(
        dataDirectory: String, issuers: IssuerDirectory, logger: Logger,
        configuration: TSPConfiguration = TSPConfiguration(), now: @escaping @Sendable () -> Date = { Date() },
        notifications: (any NotificationPublishing)? = nil, accessTokens: (any AccessTokenVerifier)? = nil,
        resources: NodeResources? = nil,
        runInBackground: ((@escaping @Sendable () async -> Void) -> Void)? = nil
    ) throws(NodeError) -> RPCRouter {
        let service: TSPService
        let broker: NotificationBroker
        // Keys this start makes are taken back when it is refused (as the vault key is): a start refused for a lost
        // vault key left a new card key and access-token key, and the start after the key was restored took them
        // without a word.
        let madeHere = TSPKeyFiles.missingKeyPaths(dataDirectory: dataDirectory, withVault: true)
        var opened = false
        defer {
            if !opened { for path in madeHere { try? FileManager.default.removeItem(atPath: path) } }
        }
        do {
            // A database that is not the TSP's is refused before any key is made beside it, or warned of as missing.
            try TSPStore.checkOwnership(path: dataDirectory + "/tsp.sqlite")
            let missingKeys = TSPKeyFiles.missingKeyWarnings(dataDirectory: dataDirectory)
            let vaultKey = try TSPKeyFiles.loadVault(dataDirectory: dataDirectory)
            let keyring = try TSPKeyFiles.loadKeyring(dataDirectory: dataDirectory)
            let accessTokenKey = try TSPKeyFiles.loadAccessTokenKey(dataDirectory: dataDirectory)
            let store = try TSPStore.open(path: dataDirectory + "/tsp.sqlite", key: vaultKey)
            if let change = store.schemaChange { logger.info(change.message, change.fields(path: store.database.path)) }
            if store.paymentAccountReferencesGiven > 0 {
                logger.info(
                    "tokens made before PARs were kept were given their cards' PARs",
                    ["tokens": "\(store.paymentAccountReferencesGiven)"])
            }
            let kept = try store.keepUnconfirmedOTPCodes()
            if kept > 0 {
                logger.info(
                    "one-time codes whose delivery the last run left without an outcome (it crashed) may have reached "
                        + "their cardholders: each stays valid, with the code it replaced", ["codes": "\(kept)"])
            }
            broker = try NotificationBroker.open(
                database: store.database, retention: configuration.notificationRetention, logger: logger,
                nowMs: { now().unixMilliseconds })
            resources?.whenCallsEnd { store.database.refuseChanges(because: NodeContext.stoppingRefusal) }
            resources?.closeWhenStopped("the TSP database") { [broker] in
                // The broker's last flush (attempts, delivery progress) is the node's own, after its calls.
                store.database.acceptChanges()
                broker.shutDown()
                try store.database.close()
            }
            var issuers = issuers
            issuers.logger = issuers.logger ?? logger
            service = TSPService(
                store: store, keyring: keyring, dataDirectory: dataDirectory, configuration: configuration,
                issuers: issuers, logger: logger,
                accessTokenKey: accessTokenKey, now: now, notifications: notifications ?? broker,
                accessTokenVerifier: accessTokens)
            service.reportIssuerAddresses()
            runInBackground?({ [journal = service.journal] in await journal.retryUntilCancelled() })
            runInBackground?({ [service] in await service.expireAuthnsUntilCancelled() })
            runInBackground?({ [service] in await service.forgetSpentCardDataUntilCancelled() })
            runInBackground?({ [service] in await service.expireStepUpsUntilCancelled() })
            // Said once the start goes on: a start refused takes the keys it made back (`madeHere`).
            for warning in missingKeys { logger.warning(warning) }
            opened = true
        } catch let error as NodeError {
            throw error
        } catch let error as CardError where error.isKeyFileProblem {
            throw NodeError(.config, error.message)
        } catch let error as StorageError where [.readOnly, .schema, .open].contains(error.code) {
            throw NodeError(.config, "cannot open the TSP's database \(dataDirectory)/tsp.sqlite", cause: error)
        } catch let error as StorageError where error.code == .corrupt {
            // As the wallet and the issuer say it: the file, and what to do. It was status 1, as a node that fails
            // while running, with SQLite's words alone.
            throw NodeError(
                .config,
                "the TSP database \(dataDirectory)/tsp.sqlite is damaged: restore it from a backup, with its vault key",
                cause: error)
        } catch let error as TSPError where error.code == .dataLoss {
            // A damaged page met past the opening, by the first reads of its work (the notification journal's):
            // the same restore, and the same status 2, as a damaged file found at the opening.
            throw NodeError(
                .config,
                "the TSP database \(dataDirectory)/tsp.sqlite is damaged: restore it from a backup, with its vault key",
                cause: error)
        } catch {
            throw NodeError(.io, "cannot open the TSP's storage or keys in \(dataDirectory)", cause: Described(error))
        }
        var router = RPCRouter()
        ProvisioningService(tsp: service).register(on: &router)
        // One table of the subscribers' instances, which registrations check too.
        let instances = SubscriberInstances.Shared()
        IssuersService(tsp: service, instances: instances).register(on: &router)
        ControlService(tsp: service).register(on: &router)
        IdvService(tsp: service).register(on: &router)
        IssuerIdvService(tsp: service).register(on: &router)
        NotificationsService(broker: broker, logger: logger, instances: instances).register(on: &router)
        LifecycleService(tsp: service).register(on: &router)
        TransactionsService(tsp: service).register(on: &router)
        IssuerCardUpdatesService(tsp: service).register(on: &router)
        EnrolmentService(tsp: service).register(on: &router)
        AuthenticationService(tsp: service).register(on: &router)
        return router
    }
}
