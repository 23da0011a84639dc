import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// The card issuer's services: decisions for the TSP and controls for operators, over its own SQLite store.
public enum IssuerNode {
    public static func services(_ context: NodeContext) throws(NodeError) -> RPCRouter {
        let logger = context.logger
        let party: IssuerParty
        do {
            party = try IssuerParty.open(
                directory: context.dataDirectory, fixturesPath: context.options.fixturesPath, logger: logger,
                tsp: context.options.peers[.tsp] == nil ? nil : try context.channel(to: .tsp),
                wallet: context.options.peers[.wallet] == nil ? nil : try context.channel(to: .wallet))
        } catch let error as NodeError {
            throw error
        } catch let error as IssuerError {
            throw NodeError(error.code == .fixture ? .config : .io, error.message, cause: error.cause)
        } catch {
            throw NodeError(.io, "cannot start the issuer", cause: DescribedError(error))
        }
        if context.options.peers[.tsp] == nil {
            logger.warning("no --tsp given: the issuer will not register with a TSP and cannot push receipts")
        } else {
            Task { await party.tsp.registerUntilDone(logger: logger) }
        }
        var router = RPCRouter()
        party.decisions.register(on: &router)
        party.control.register(on: &router)
        return router
    }
}

/// The issuer's parts, wired together: built by `IssuerNode` from the node's context, and by tests from fakes.
struct IssuerParty: Sendable {
    let store: IssuerStore
    let key: RSAPrivateKey
    let tsp: TSPLink
    let decisions: IssuerDecisionsService
    let control: IssuerControlService

    init(
        store: IssuerStore, key: RSAPrivateKey, tsp: (any RPCCaller)?, wallet: (any RPCCaller)?, logger: Logger,
        registrationTimeout: Duration = .seconds(5), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.key = key
        let link = TSPLink(caller: tsp, attemptTimeout: registrationTimeout) { () throws(IssuerError) in
            guard let profile = try store.profile() else {
                throw IssuerError(.fixture, "the issuer has no profile yet; start it once with --fixtures FILE")
            }
            do {
                return TspV1.RegisterIssuerRequest(
                    issuerID: profile.id, displayName: profile.name,
                    binRanges: profile.binRanges.map { TspV1.BinRange(low: $0.low, high: $0.high) },
                    encryptionPublicKeyPem: try key.publicKey.pem())
            } catch {
                throw IssuerError(.keys, "cannot write the issuer's public key as PEM", cause: error)
            }
        }
        self.tsp = link
        self.decisions = IssuerDecisionsService(store: store, key: key, logger: logger, now: now)
        self.control = IssuerControlService(store: store, tsp: link, wallet: wallet, logger: logger, now: now)
    }

    /// Opens the data directory's store and key, loading `fixturesPath` when given.
    static func open(
        directory: String, fixturesPath: String?, logger: Logger, tsp: (any RPCCaller)?, wallet: (any RPCCaller)?
    ) throws(IssuerError) -> IssuerParty {
        let store = try IssuerStore.open(directory: directory)
        if let fixturesPath {
            let fixture = try IssuerFixture.load(path: fixturesPath)
            try store.importFixture(fixture)
            logger.info(
                "fixture loaded",
                ["issuer": fixture.issuer.id, "cards": "\(fixture.cards.count)", "path": fixturesPath])
        } else if try store.profile() == nil {
            logger.warning("no --fixtures given and no cards stored yet: the issuer knows no cards")
        }
        let key = try IssuerKeyFile.loadOrCreate(directory: directory)
        logger.info("issuer key ready", ["kid": key.kid])
        return IssuerParty(store: store, key: key, tsp: tsp, wallet: wallet, logger: logger)
    }
}
