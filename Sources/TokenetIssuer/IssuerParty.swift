import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// The issuer's parts, wired together: built by `IssuerNode` from the node's context, and by tests from fakes.
struct IssuerParty: Sendable {
    let store: IssuerStore
    let key: RSAPrivateKey
    let tsp: TSPLink
    let decisions: IssuerDecisionsService
    let control: IssuerControlService
    let otp: IssuerOtpService
    let callCentre: IssuerCallCentreService
    let cardCare: IssuerCardCareService
    /// The check of the issuer's tokens with the TSP, run each time the notification stream opens (its signal) and
    /// by `SyncWithTsp`.
    let tokenSync: IssuerTokenSync
    let appToApp: IssuerAppToAppService
    /// Strong authentication: the backend that enrols accounts with the TSP, and the issuer app that activates them
    /// and logs in.
    let enrolment: IssuerEnrolmentBackend
    let app: IssuerAppAuthenticator
    /// How the app-to-app flow signs a cardholder in (the issuer app's login).
    var cardholderLogin: any CardholderLogin { app }

    /// `login` replaces the issuer app's own login for in-app activation (tests pass a fake).
    init(
        store: IssuerStore, key: RSAPrivateKey, tsp: (any RPCCaller)?, wallet: (any RPCCaller)?, logger: Logger,
        registrationTimeout: Duration? = .seconds(5), appKeyIterations: Int = 100_000,
        now: @escaping @Sendable () -> Date = { Date() }, login: (any CardholderLogin)? = nil, instanceID: String = ""
    ) {
        self.store = store
        self.key = key
        let memory = TSPLink.RegisteredTSPMemory(
            load: { () throws(IssuerError) in try store.registeredTSPNodeID() },
            save: { (nodeID) throws(IssuerError) in try store.setRegisteredTSP(nodeID: nodeID) })
        let link = TSPLink(caller: tsp, attemptTimeout: registrationTimeout, memory: memory, logger: logger) {
            () throws(IssuerError) in
            guard let profile = try store.profile() else {
                throw IssuerError(.fixture, "the issuer has no profile yet; start it once with --fixtures FILE")
            }
            do {
                return TspV1.RegisterIssuerRequest(
                    issuerID: profile.id, displayName: profile.name,
                    binRanges: profile.binRanges.map { TspV1.BinRange(low: $0.low, high: $0.high) },
                    encryptionPublicKeyPem: try key.publicKey.pem(), instanceID: instanceID)
            } catch {
                throw IssuerError(.keys, "cannot write the issuer's public key as PEM", cause: error)
            }
        }
        self.tsp = link
        let decisions = IssuerDecisionsService(store: store, key: key, tsp: link, logger: logger, now: now)
        self.decisions = decisions
        let cardCare = IssuerCardCareService(store: store, tsp: link, logger: logger, now: now)
        self.cardCare = cardCare
        let tokenSync = IssuerTokenSync(
            store: store, decisions: decisions, cardCare: cardCare, signal: StreamOpenedSignal(), logger: logger)
        self.tokenSync = tokenSync
        self.control = IssuerControlService(
            store: store, tsp: link, wallet: wallet, tokenSync: tokenSync, logger: logger, now: now)
        self.otp = IssuerOtpService(store: store, tsp: link, logger: logger, now: now)
        self.callCentre = IssuerCallCentreService(store: store, tsp: link, logger: logger)
        let enrolment = IssuerEnrolmentBackend(store: store, tsp: link, logger: logger, now: now)
        self.enrolment = enrolment
        let app = IssuerAppAuthenticator(
            store: store, backend: enrolment, logger: logger, iterations: appKeyIterations, now: now)
        self.app = app
        self.appToApp = IssuerAppToAppService(
            store: store, tsp: link, wallet: wallet, login: login ?? app, logger: logger, now: now)
    }

    /// The operator services of strong authentication.
    func registerAuthentication(on router: inout RPCRouter) {
        IssuerEnrolmentService(backend: enrolment).register(on: &router)
        IssuerAppAuthService(app: app).register(on: &router)
    }

    /// A fixture card past its expiry is loaded, for trying out how an expired card is declined, but named in the
    /// log (by its last four digits), since a card that expired since the file was written is more often an
    /// oversight. A card renewed since keeps its renewed expiry and is judged by that. Read from the stored cards'
    /// clear columns: nothing is unsealed, so a store of many cards starts quickly.
    static func warnOfExpiredCards(
        in fixture: IssuerFixture, store: IssuerStore, logger: Logger, now: Date
    ) throws(IssuerError) {
        let ids = Set(fixture.cards.map(\.id))
        for card in try store.cardExpiries() where ids.contains(card.id) && card.expiry.hasPassed(asOf: now) {
            logger.warning(
                "fixture card has expired: eligibility checks of it answer that the card expired",
                ["card": card.id, "last4": card.last4, "expiry": card.expiry.description])
        }
    }

    /// Opens the data directory's store and key, loading `fixturesPath` when given.
    static func open(
        directory: String, fixturesPath: String?, logger: Logger, tsp: (any RPCCaller)?, wallet: (any RPCCaller)?,
        login: (any CardholderLogin)? = nil, instanceID: String = ""
    ) throws(IssuerError) -> IssuerParty {
        let store = try IssuerStore.open(directory: directory)
        if let change = store.schemaChange { logger.info(change.message, change.fields(path: store.database.path)) }
        if let fixturesPath {
            let fixture = try IssuerFixture.load(path: fixturesPath)
            try store.importFixture(fixture)
            logger.info(
                "fixture loaded",
                ["issuer": fixture.issuer.id, "cards": "\(fixture.cards.count)", "path": fixturesPath])
            try warnOfExpiredCards(in: fixture, store: store, logger: logger, now: Date())
        } else if try store.profile() == nil {
            logger.warning("no --fixtures given and no cards stored yet: the issuer knows no cards")
        }
        let key = try IssuerKeyFile.loadOrCreate(directory: directory)
        logger.info("issuer key ready", ["kid": key.kid])
        return IssuerParty(
            store: store, key: key, tsp: tsp, wallet: wallet, logger: logger, login: login, instanceID: instanceID)
    }
}
