import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetIssuer

/// A login that accepts PIN 24681357 for every cardholder and hands out `at-<user>`.
struct FakeLogin: CardholderLogin {
    func accessToken(forUser userID: String, pin: String) async throws(IssuerError) -> String {
        guard pin != "9999" else { throw IssuerError(.locked, "the app is locked after 5 wrong PINs") }
        guard pin != "5555" else {
            throw IssuerError(
                .storage, "cannot advance the app's counters", cause: StorageError(.busy, "database is locked"))
        }
        guard pin == "24681357" else { throw IssuerError(.keys, "wrong PIN for \(userID)") }
        return "at-\(userID)"
    }
}

/// The wallet provider as the issuer app sees it: its Apple Pay passes, one a page, and the activation responses it
/// was sent.
final class FakeAppWallet: WalletV1.WalletAppToApp.ServiceProtocol, WalletV1.WalletEvents.ServiceProtocol {
    let responses = Mutex<[WalletV1.BankingAppActivationRequest]>([])
    /// When set, activation responses are never answered (a wallet behind a partitioned link).
    let silent = Mutex(false)
    let passes: [WalletV1.TokenStatus]

    init(passes: [WalletV1.TokenStatus]) { self.passes = passes }

    func openIssuerApp(_ request: WalletV1.OpenIssuerAppRequest, context: ServerContext) async throws
        -> WalletV1.OpenIssuerAppResponse
    { throw RPCError(.unimplemented, "not the wallet app") }

    func bankingAppActivationResponse(_ request: WalletV1.BankingAppActivationRequest, context: ServerContext)
        async throws -> WalletV1.BankingAppActivationAck
    {
        if silent.withLock({ $0 }) { try await Task.sleep(for: .seconds(3600)) }
        responses.withLock { $0.append(request) }
        return WalletV1.BankingAppActivationAck(changed: request.result == .approved)
    }

    func listen(
        _ request: WalletV1.ListenRequest, responses: ResponseWriter<WalletV1.WalletEvent>, context: ServerContext
    ) async throws {}

    func currentTokens(_ request: WalletV1.CurrentTokensRequest, context: ServerContext) async throws
        -> WalletV1.CurrentTokensResponse
    {
        // One pass a page, so a lookup must go on past the first page.
        let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "CurrentTokens")
        let start = Int(try page.afterRow(call: "CurrentTokens"))
        let next = start + 1 < passes.count ? page.token(after: PageRequest.key(row: Int64(start + 1))) : ""
        return WalletV1.CurrentTokensResponse(
            walletAccountID: "wallet-account-1", tokens: Array(passes.dropFirst(start).prefix(1)), nextPageToken: next)
    }
}

/// In-app activation at the issuer over in-memory connections: a fake TSP, a fake wallet and a fake login.
@Suite struct AppToAppTests {
    static let token = "DNITHE000000000054"
    let tsp = FakeTSPIdv()
    let wallet = FakeAppWallet(passes: [
        WalletV1.TokenStatus(
            digitalCardID: "DNITHE000000000053", tokenState: .active, passSerialNumber: "PASS-53", panLast4: "0053"),
        WalletV1.TokenStatus(
            digitalCardID: token, tokenState: .inactive, passSerialNumber: "PASS-54", panLast4: "0054"),
    ])
    let app: IssuerV1.IssuerAppToApp.Client
    let person: IssuerV1.IssuerAppToApp.Client
    let sink = MemoryLogSink()
    let store: IssuerStore
    let router: RPCRouter

    init(login: (any CardholderLogin)? = FakeLogin(), walletNoticeLimit: Duration? = nil) async throws {
        var tspRouter = RPCRouter()
        tsp.register(on: &tspRouter)
        var walletRouter = RPCRouter()
        (wallet as any WalletV1.WalletAppToApp.ServiceProtocol).register(on: &walletRouter)
        (wallet as any WalletV1.WalletEvents.ServiceProtocol).register(on: &walletRouter)
        let walletCaller = Support.connect(
            walletRouter, as: .issuer, server: PeerIdentity(role: .wallet, nodeID: "wallet-1"))
        let party = try Support.party(
            tsp: Support.connect(tspRouter, as: .issuer), wallet: walletCaller, sink: sink, login: login)
        store = party.store
        var router = Support.router(party)
        // The party always signs in with the issuer app's own login unless given another; without any, the
        // service refuses to complete sessions.
        // The wallet is waited for as long as a loaded machine may take to answer in memory (a whole run of the
        // tests took more than the node's 5 s), unless a test gives its own limit.
        let service = IssuerAppToAppService(
            store: party.store, tsp: party.tsp, wallet: walletCaller, login: login, logger: Support.logger(sink),
            now: { Support.now }, walletNoticeLimit: walletNoticeLimit ?? .seconds(600))
        service.register(on: &router)
        self.router = router
        app = IssuerV1.IssuerAppToApp.Client(Support.connect(router, as: .wallet))
        person = IssuerV1.IssuerAppToApp.Client(Support.connect(router, as: .operator))
        // The issuer learns which card a token is for when it decides the digitization.
        var request = IssuerV1.AuthorizeDigitizationRequest()
        request.encryptedCardData = try Support.encrypted(
            Cards.visaStepUp.1, expiry: Cards.visaStepUp.2, to: try Support.issuerKey())
        request.digitalCardID = Self.token
        let decision = try await IssuerV1.IssuerDecisions.Client(Support.connect(router, as: .tsp))
            .authorizeDigitization(request)
        #expect(decision.accountID == "acc-chloe-credit")
    }

    static func visa(_ token: String = token, last4: String = "0054", requestor: String = "40010075001") -> String {
        ActivationDataTests.b64(
            #"{"tokenReferenceID":"\#(token)","panLast4":"\#(last4)","tokenRequestorID":"\#(requestor)"}"#)
    }

    func open(_ data: String = visa(), caller: String = "com.google.android.gms", serial: String = "") async throws
        -> IssuerV1.OpenAppResponse
    {
        try await app.openApp(IssuerV1.OpenAppRequest(caller: caller, activationData: data, serialNumber: serial))
    }

    /// A sign-in that fails on the issuer's own storage leaves the session open for another try: it stayed "already
    /// being completed", with nothing running, until it expired 20 minutes on.
    @Test func aStorageFailureLeavesTheSessionOpen() async throws {
        let opened = try await open()
        try store.database.execute("ALTER TABLE app_accounts RENAME TO app_accounts_away")
        let failed = await Support.rpcError {
            _ = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        }
        #expect(failed != nil && failed?.code != .failedPrecondition, "\(String(describing: failed))")
        try store.database.execute("ALTER TABLE app_accounts_away RENAME TO app_accounts")
        let done = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        #expect(done.result == .approved && done.tokenState == .active)
    }

    /// Only the wallet node the TSP said the token is digitized through opens the issuer app for it: another wallet
    /// node that learnt the token's reference got a session, and the cardholder's sign-in activated the token there.
    @Test func anotherWalletNodeCannotOpenTheAppForAToken() async throws {
        let cardID = try #require(try store.card(forDigitalCardID: Self.token)?.id)
        func decided(through walletNodeID: String) throws {
            try store.record(
                DecisionRecord(
                    cardID: cardID, last4: "0054", digitalCardID: Self.token, tokenLast4: "9999",
                    walletAccountID: "wallet-account-1", inputMethod: 0, deviceID: "", deviceType: "",
                    risk: RiskScores(account: 1, device: 1), recommendation: 0, rule: nil,
                    outcome: .stepUp([]), walletNodeID: walletNodeID),
                at: Support.now)
        }
        try decided(through: "wallet-2")
        let refused = await Support.rpcError { _ = try await open() }
        #expect(refused?.code == .permissionDenied, "\(String(describing: refused))")
        #expect(refused?.message.contains("was not digitized through this wallet node") == true)
        // The caller sent a reference, not the token: another wallet's token is not named to it.
        #expect(refused?.message.contains(Self.token) == false, "\(String(describing: refused))")
        try decided(through: "wallet-1")
        #expect(try await open().digitalCardID == Self.token)
    }

    /// The outcome goes to the wallet node that opened the app, or to none: the issuer's --wallet, another wallet
    /// node, was told a token it does not hold, and the one that opened the app heard nothing from the issuer.
    @Test func anotherWalletNodesOutcomeIsNotToldToTheIssuersWallet() async throws {
        let cardID = try #require(try store.card(forDigitalCardID: Self.token)?.id)
        try store.record(
            DecisionRecord(
                cardID: cardID, last4: "0054", digitalCardID: Self.token, tokenLast4: "9999",
                walletAccountID: "wallet-account-1", inputMethod: 0, deviceID: "", deviceType: "",
                risk: RiskScores(account: 1, device: 1), recommendation: 0, rule: nil,
                outcome: .stepUp([]), walletNodeID: "wallet-2"),
            at: Support.now)
        let wallet2 = IssuerV1.IssuerAppToApp.Client(Support.connect(router, as: .wallet, nodeID: "wallet-2"))
        let opened = try await wallet2.openApp(
            IssuerV1.OpenAppRequest(caller: "com.google.android.gms", activationData: Self.visa()))
        let done = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        #expect(done.result == .approved && done.tokenState == .active)
        #expect(!done.walletNotified)
        #expect(
            done.walletError.hasPrefix("the issuer's --wallet is not wallet node wallet-2, which opened the app ("),
            "\(done.walletError)")
        #expect(wallet.responses.withLock { $0 }.isEmpty)
    }

    @Test func theCardholderSignsInAndTheWalletHearsApproved() async throws {
        let opened = try await open()
        #expect(opened.message == "card ending 0054 — sign in to activate")
        #expect(opened.digitalCardID == Self.token && opened.cardLast4 == "0054")
        let done = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        #expect(done.result == .approved && done.tokenState == .active && done.walletNotified && !done.alreadyActive)
        #expect(tsp.inApp.withLock { $0.map(\.accessToken) } == ["at-ch-chloe"])
        let told = try #require(wallet.responses.withLock { $0.last })
        #expect(told.result == .approved && told.digitalCardID == Self.token && told.tokenState == .active)
        // The TSP's version of the state goes on to the wallet, which keeps a later state it already heard.
        #expect(told.sessionID == opened.sessionID && told.stateVersion == 2)
        let again = await Support.rpcError {
            _ = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        }
        #expect(again?.code == .failedPrecondition && again?.message.contains("already finished") == true)
        // Opened again for the token, now ACTIVE: the sign-in is approved, and says that it changed nothing.
        let reopened = try await open()
        let repeated = try await person.authorize(.init(sessionID: reopened.sessionID, pin: "24681357"))
        #expect(repeated.result == .approved && repeated.alreadyActive)
    }

    /// A wallet that does not answer (a partitioned link) does not hold the cardholder's answer: the token is
    /// activated at the TSP, which tells the wallet itself, and the answer says the wallet was not told. Before, the
    /// call to the wallet took all of the served call's deadline, and the cardholder got DEADLINE_EXCEEDED for an
    /// activation that had succeeded.
    @Test func aWalletThatDoesNotAnswerDoesNotHoldTheOutcome() async throws {
        let cut = try await AppToAppTests(walletNoticeLimit: .milliseconds(300))
        cut.wallet.silent.withLock { $0 = true }
        let opened = try await cut.open()
        let done = try await cut.person.authorize(
            .init(sessionID: opened.sessionID, pin: "24681357"), options: CallOptions(timeout: .seconds(60)))
        #expect(done.result == .approved && done.tokenState == .active && !done.walletNotified)
        #expect(
            done.walletError == "the wallet did not answer within 300 ms; it hears of the token's state from the TSP")
        let logged = cut.sink.lines
        #expect(logged.contains { $0.contains("the wallet could not be told the in-app outcome") }, "\(logged)")
    }

    /// An app in which the cardholder activated accounts acts for those alone: the card of an account removed from
    /// it (or never activated there) is not activated, the PIN is not asked, and the session stays open for the
    /// account to be activated. Before, the TSP activated it with an access token of the account left in the app.
    @Test func aCardOfAnAccountNotInTheAppIsNotActivated() async throws {
        func account(_ id: String) -> AppAccountRecord {
            AppAccountRecord(
                userID: "ch-chloe", accountID: id, displayName: id, userCredentialID: "u-\(id)",
                userSecretSealed: [1], deviceCredentialID: "d-\(id)", deviceSecretSealed: [2], digits: 6,
                userCounter: 0, deviceCounter: 0, activatedAtMs: 1)
        }
        try store.insertAppUser(
            AppUserRecord(userID: "ch-chloe", salt: [1], pinCheck: [2], devicePIN: "0000"), nowMs: 1)
        try store.saveAppAccount(account("acc-chloe-savings"))
        let opened = try await open()
        let refused = await Support.rpcError {
            _ = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        }
        #expect(refused?.code == .failedPrecondition)
        #expect(
            refused?.message
                == "card ending 0054 is of account acc-chloe-credit, which is not activated in ch-chloe's app; "
                + "activate it there (tokenet issuer-app activate-linked), or deny the session and use another "
                + "ID&V method")
        #expect(tsp.inApp.withLock { $0.isEmpty })
        try store.saveAppAccount(account("acc-chloe-credit"))
        let done = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        #expect(done.result == .approved)
    }

    /// The pass is on the wallet's second page of CurrentTokens: the lookup reads on until it finds it.
    @Test func anApplePayPassIsResolvedThroughTheWallet() async throws {
        let opened = try await open("", caller: "paymentpass.com.apple", serial: "PASS-54")
        #expect(opened.digitalCardID == Self.token && opened.message.hasPrefix("card ending 0054"))
        let unknown = await Support.rpcError { _ = try await open("", caller: "paymentpass.com.apple", serial: "X") }
        #expect(unknown?.code == .notFound && unknown?.message.contains("no pass with serial number") == true)
    }

    @Test func refusalsAtOpeningActivateNothing() async throws {
        let cases: [(String, String, StatusCode, String)] = [
            (Self.visa(), "com.example.wallet", .permissionDenied, "does not accept activation"),
            ("%%%", "com.google.android.gms", .invalidArgument, "not valid base64"),
            (Self.visa("DNITHE-unknown"), "com.google.android.gms", .notFound, "knows no token"),
            (Self.visa(last4: "9999"), "com.google.android.gms", .notFound, "no card ending 9999"),
            // Chloe's other card ends 0068: hers, but not the token's card.
            (Self.visa(last4: "0068"), "com.google.android.gms", .invalidArgument, "not the card of token"),
            (
                ActivationDataTests.b64(#"{"tokenUniqueReference":"\#(Self.token)","accountPanSuffix":"0054"}"#),
                "com.google.android.gms", .invalidArgument, "the activation data is Mastercard's"
            ),
            (Self.visa(), "com.samsung.android.spay", .invalidArgument, "not Samsung Pay's"),
        ]
        for (data, caller, code, text) in cases {
            let error = await Support.rpcError { _ = try await open(data, caller: caller) }
            #expect(error?.code == code, "\(caller) \(text): \(String(describing: error))")
            #expect(error?.message.contains(text) == true, "\(String(describing: error))")
        }
        #expect(tsp.inApp.withLock { $0.isEmpty })
        #expect(wallet.responses.withLock { $0.isEmpty })
    }

    @Test func aWrongPINLeavesTheSessionOpenAndDenyingTellsTheWallet() async throws {
        let opened = try await open()
        let wrong = await Support.rpcError {
            _ = try await person.authorize(.init(sessionID: opened.sessionID, pin: "0000"))
        }
        #expect(wrong?.code == .unauthenticated && wrong?.message.contains("could not be signed in") == true)
        #expect(!(wrong?.message.contains("0000") ?? true) || wrong?.message.contains("wrong PIN") == true)
        // A locked app is RESOURCE_EXHAUSTED, as login answers it: it was UNAUTHENTICATED, as a wrong PIN is.
        let locked = await Support.rpcError {
            _ = try await person.authorize(.init(sessionID: opened.sessionID, pin: "9999"))
        }
        #expect(locked?.code == .resourceExhausted && locked?.message.contains("locked") == true)
        // A database another process holds is said with what to do, as a login says it: it said only "cannot
        // advance the app's counters".
        let busy = await Support.rpcError {
            _ = try await person.authorize(.init(sessionID: opened.sessionID, pin: "5555"))
        }
        #expect(busy?.code == .unavailable, "\(String(describing: busy))")
        #expect(
            busy?.message.contains(
                "could not be signed in: cannot advance the app's counters: the issuer's database was locked by "
                    + "another connection for too long") == true, "\(String(describing: busy))")
        let denied = try await person.authorize(.init(sessionID: opened.sessionID, deny: true))
        #expect(denied.result == .failure && denied.reason == "the cardholder declined in the issuer app")
        #expect(tsp.inApp.withLock { $0.isEmpty })
        let told = try #require(wallet.responses.withLock { $0.last })
        #expect(told.result == .failure && told.reason == denied.reason)
        let both = await Support.rpcError {
            _ = try await person.authorize(.init(sessionID: "x", pin: "1", deny: true))
        }
        #expect(both?.code == .invalidArgument)
        let unknown = await Support.rpcError { _ = try await person.authorize(.init(sessionID: "x", pin: "1")) }
        #expect(unknown?.code == .notFound)
    }

    @Test func anUnreachableTSPLeavesTheSessionOpenForAnotherTry() async throws {
        tsp.inAppRefusal.withLock { $0 = RPCError(.unavailable, "connection refused") }
        let opened = try await open()
        let error = await Support.rpcError {
            _ = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        }
        #expect(error?.code == .unavailable && error?.message.contains("try again") == true)
        #expect(wallet.responses.withLock { $0.isEmpty })
        tsp.inAppRefusal.withLock { $0 = nil }
        let done = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        #expect(done.result == .approved)
        #expect(!sink.lines.contains { $0.contains("24681357") || $0.contains("at-ch-chloe") })
    }

    @Test func theTSPsRefusalIsTheWalletsFailure() async throws {
        tsp.inAppRefusal.withLock { $0 = RPCError(.permissionDenied, "user \"ch-chloe\" does not own the account") }
        let opened = try await open()
        let done = try await person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        #expect(done.result == .failure && done.reason.contains("PERMISSION_DENIED") && done.walletNotified)
        #expect(wallet.responses.withLock { $0.last?.reason } == done.reason)
    }

    @Test func withoutALoginSessionsOpenButCannotBeCompleted() async throws {
        let without = try await AppToAppTests(login: nil)
        let opened = try await without.open()
        let error = await Support.rpcError {
            _ = try await without.person.authorize(.init(sessionID: opened.sessionID, pin: "24681357"))
        }
        #expect(error?.code == .failedPrecondition && error?.message.contains("authentication service") == true)
        #expect(without.tsp.inApp.withLock { $0.isEmpty })
        let denied = try await without.person.authorize(.init(sessionID: opened.sessionID, deny: true))
        #expect(denied.result == .failure)
    }
}

/// The session table alone: each step's outcome.
@Suite struct AppToAppSessionsTests {
    static func session(_ id: String, expiresAtMs: UInt64 = 1_000) -> AppToAppSessions.Session {
        AppToAppSessions.Session(
            id: id, caller: .googlePay, digitalCardID: "D1", cardID: "c1", cardLast4: "0054", cardholderID: "ch-1",
            expiresAtMs: expiresAtMs)
    }

    @Test func aSessionIsCompletedOnce() {
        var sessions = AppToAppSessions()
        sessions.open(Self.session("s1"), nowMs: 0)
        guard case .proceed(let session) = sessions.begin("s1", nowMs: 10) else {
            Issue.record("an open session did not proceed")
            return
        }
        #expect(session.status == .authorizing)
        #expect(
            sessions.begin("s1", nowMs: 10)
                == .refused(.failedPrecondition, "session \"s1\" is already being completed"))
        sessions.reopen("s1")
        #expect(sessions.sessions["s1"]?.status == .open)
        _ = sessions.begin("s1", nowMs: 10)
        sessions.finish("s1", .approved)
        guard case .refused(.failedPrecondition, let message) = sessions.begin("s1", nowMs: 10) else {
            Issue.record("a finished session was not refused")
            return
        }
        #expect(
            message
                == "session \"s1\" is already finished (BANKING_APP_ACTIVATION_RESULT_APPROVED); its token is "
                + "ACTIVE, so there is nothing left to do")
        // A session that ended otherwise says to open the app again.
        sessions.open(Self.session("s2"), nowMs: 10)
        _ = sessions.begin("s2", nowMs: 10)
        sessions.finish("s2", .failure)
        guard case .refused(.failedPrecondition, let declined) = sessions.begin("s2", nowMs: 10) else {
            Issue.record("a finished session was not refused")
            return
        }
        #expect(declined.hasSuffix("; open the issuer app from the wallet again"), "\(declined)")
    }

    @Test func expiredAndUnknownSessionsAreRefused() {
        var sessions = AppToAppSessions()
        sessions.open(Self.session("s1", expiresAtMs: 1_000), nowMs: 0)
        guard case .refused(.failedPrecondition, let message) = sessions.begin("s1", nowMs: 1_000) else {
            Issue.record("an expired session was not refused")
            return
        }
        #expect(message.contains("has expired"))
        guard case .refused(.notFound, _) = sessions.begin("s2", nowMs: 0) else {
            Issue.record("an unknown session was not refused")
            return
        }
        sessions.open(Self.session("s3", expiresAtMs: 5_000), nowMs: 2_000)
        #expect(sessions.sessions.keys.sorted() == ["s3"])
    }

    /// A session whose completion never came back (neither finished nor reopened) is forgotten a lifetime after it
    /// expired, and a finished one once it expired, without waiting for another session to be opened: the table
    /// holds the sessions of the last lifetime or two, however many were ever opened.
    @Test func theTableKeepsNoSessionItCannotUse() {
        let lifetime = AppToAppSessions.lifetimeMs
        var sessions = AppToAppSessions()
        sessions.open(Self.session("stuck", expiresAtMs: lifetime), nowMs: 0)
        _ = sessions.begin("stuck", nowMs: 1)
        sessions.open(Self.session("done", expiresAtMs: lifetime), nowMs: 0)
        _ = sessions.begin("done", nowMs: 1)
        sessions.finish("done", .approved)
        _ = sessions.begin("other", nowMs: lifetime)
        #expect(sessions.sessions.keys.sorted() == ["stuck"])
        _ = sessions.begin("other", nowMs: 2 * lifetime - 1)
        #expect(sessions.sessions.keys.sorted() == ["stuck"])
        _ = sessions.begin("other", nowMs: 2 * lifetime)
        #expect(sessions.sessions.isEmpty)

        for index in 0..<1_000 {
            let nowMs = UInt64(index) * 60_000
            sessions.open(Self.session("s\(index)", expiresAtMs: nowMs + lifetime), nowMs: nowMs)
            _ = sessions.begin("s\(index)", nowMs: nowMs)
        }
        #expect(sessions.sessions.count <= Int(2 * lifetime / 60_000))
    }
}
