import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

/// The card issuer's services: decisions for the TSP and controls for operators, over its own SQLite store. Its
/// policy (`IssuerPolicy`, from `issuer-policy.json` in the data directory when present) sets how long the issuer app
/// keeps ended authentication requests, and the issuer its outbox messages.
public enum IssuerNode {
    public static func services(_ context: NodeContext) throws(NodeError) -> RPCRouter {
        try services(context, login: nil)
    }

    /// The services with the cardholder login the issuer app signs cardholders in with; without one, in-app
    /// activation opens sessions but refuses to complete them.
    public static func services(_ context: NodeContext, login: (any CardholderLogin)?) throws(NodeError)
        -> RPCRouter
    {
        let logger = context.logger
        let policy = try IssuerPolicy.load(dataDirectory: context.dataDirectory)
        let party: IssuerParty
        do {
            party = try IssuerParty.open(
                directory: context.dataDirectory, fixturesPath: context.options.fixturesPath, logger: logger,
                tsp: context.options.peers[.tsp] == nil ? nil : try context.channel(to: .tsp),
                wallet: context.options.peers[.wallet] == nil ? nil : try context.channel(to: .wallet), login: login,
                // Sent with the registration, which the TSP refuses while another node of this certificate runs.
                instanceID: context.options.peers[.tsp] == nil ? "" : try context.instanceID())
        } catch let error as NodeError {
            throw error
        } catch let error as IssuerError {
            throw startFailure(error, directory: context.dataDirectory)
        } catch {
            throw NodeError(.io, "cannot start the issuer", cause: DescribedError(error))
        }
        context.whenCallsEnd { [store = party.store] in
            store.database.refuseChanges(because: NodeContext.stoppingRefusal)
        }
        context.closeWhenStopped("the issuer database") { [store = party.store] in try store.database.close() }
        var registering = false
        if context.options.peers[.tsp] == nil {
            logger.warning("no --tsp given: the issuer will not register with a TSP and cannot push cards")
        } else if context.options.plaintext {
            // The TSP takes a registration only from an issuer's certificate: tried over plaintext, it was refused
            // every 10 s, logged as an error to fix, for as long as the node ran.
            logger.warning(
                "--plaintext: not registering with the TSP, nor subscribing to its notifications (both need the "
                    + "issuer's certificate)")
        } else if try Self.profileAtStart(party.store, directory: context.dataDirectory) == nil {
            logger.warning(
                "the issuer has no profile (start it once with --fixtures FILE); not registering, nor subscribing to "
                    + "the TSP's notifications")
        } else {
            registering = true
            let outgoing = context.outgoing
            context.runInBackground {
                await party.tsp.registerUntilDone(logger: logger, isStarting: { outgoing.isStarting })
            }
        }
        let appView = IssuerAppView()
        let appNotifications: IssuerAppNotificationHandler
        do {
            appNotifications = try IssuerAppNotificationHandler(
                view: appView, logger: logger, store: party.store, retention: policy.appAuthnRetention,
                outboxRetention: policy.outboxRetention)
        } catch {
            // Its first reads of the app's tables are the start's too: a damaged page there is the file to restore.
            throw startFailure(error, directory: context.dataDirectory)
        }
        context.runInBackground { await appNotifications.pruneUntilCancelled() }
        if context.options.peers[.wallet] != nil {
            let outgoing = context.outgoing
            let link = IssuerAppLink(
                wallet: try context.channel(to: .wallet), view: appView, logger: logger,
                isStarting: { outgoing.isStarting })
            context.runInBackground { await link.run() }
        }
        // The TSP's notifications: its stand-in advice for the decisions, the rest processed by the issuer app
        // (processNotification, then the app's action). Each time the stream opens, the issuer's tokens are checked
        // with the TSP (IssuerTokenSync). Only once registered in this run: a node the TSP refused (another node
        // holds its issuer id), or one with no issuer to register, must not take the messages of its node id's queue
        // from the issuer they are for.
        if registering {
            let link = party.tsp
            let subscriber = try context.subscribeToNotifications(
                handler: IssuerNodeNotifications(
                    app: appNotifications, decisions: party.decisions, cardCare: party.cardCare, logger: logger,
                    opened: party.tokenSync.signal),
                beforeSubscribing: { @Sendable in await link.waitUntilRegistered() })
            if subscriber != nil {
                context.runInBackground { await party.tokenSync.run() }
                let cardCare = party.cardCare
                context.runInBackground { await cardCare.retryPendingTokenChanges() }
            }
        }
        var router = RPCRouter()
        IssuerAppService(view: appView).register(on: &router)
        party.decisions.register(on: &router)
        party.control.register(on: &router)
        party.otp.register(on: &router)
        party.callCentre.register(on: &router)
        party.cardCare.register(on: &router)
        IssuerAppInboxService(
            handler: appNotifications, tsp: party.tsp.caller, logger: logger, store: party.store,
            login: party.cardholderLogin
        ).register(on: &router)
        party.registerAuthentication(on: &router)
        party.appToApp.register(on: &router)
        return router
    }

    /// How a failure to open the issuer stops the node. A bad fixture, a vault key that cannot open the data the
    /// database holds (or a damaged check value for it), a database the node cannot write or SQLite finds damaged,
    /// and one whose schema is not what this build expects (a table missing, a newer version) are the operator's to
    /// fix before a restart can help: they exit with status 2, like other configuration mistakes. A damaged page met
    /// by any read of the start (the fixture's tables, the app's notifications), not only at open, names the file
    /// in `directory` and what to do: it said "cannot load the fixture into the database", as if the fixture were
    /// wrong, or exited 1 with SQLite's words alone.
    /// The issuer's profile, read at start. A read that fails stops the start with its cause: taken for "no
    /// profile", it sent the operator to load a fixture the database holds, and the node neither registered nor
    /// subscribed for its whole run.
    static func profileAtStart(_ store: IssuerStore, directory: String) throws(NodeError) -> IssuerProfile? {
        do {
            return try store.profile()
        } catch {
            throw startFailure(error, directory: directory)
        }
    }

    static func startFailure(_ error: IssuerError, directory: String) -> NodeError {
        if let keys = error.cause as? CardError, keys.isKeyFileProblem {
            return NodeError(.config, keys.message)
        }
        if error.cause is ExposedKeyFile {
            return NodeError(.config, error.message)
        }
        if let storage = error.cause as? StorageError, storage.code == .corrupt {
            return NodeError(
                .config, IssuerStore.damaged(IssuerStore.path(in: directory), storage).message, cause: storage)
        }
        if let storage = error.cause as? StorageError, [.readOnly, .corrupt, .schema, .open].contains(storage.code) {
            return NodeError(.config, error.message, cause: storage)
        }
        return NodeError(error.code == .fixture ? .config : .io, error.message, cause: error.cause)
    }
}
