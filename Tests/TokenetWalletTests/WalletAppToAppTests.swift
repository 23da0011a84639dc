import Foundation
import Synchronization
import Testing
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetWallet

/// The issuer app as the wallet sees it: records how it was opened and answers with a session.
final class FakeIssuerApp: IssuerV1.IssuerAppToApp.ServiceProtocol {
    let opened = Mutex<[IssuerV1.OpenAppRequest]>([])

    func openApp(_ request: IssuerV1.OpenAppRequest, context: ServerContext) async throws -> IssuerV1.OpenAppResponse {
        let count = opened.withLock {
            $0.append(request)
            return $0.count
        }
        guard request.caller != "com.example.wallet" else {
            throw RPCError(.permissionDenied, "the issuer app does not accept activation from \"com.example.wallet\"")
        }
        // As the RPC client reports an issuer node that is down.
        guard request.caller != "test.unreachable" else {
            throw RPCError(.unavailable, "cannot connect to 127.0.0.1:7002: connection refused")
        }
        return IssuerV1.OpenAppResponse(sessionID: "app-\(count)", message: "card ending 0054 — sign in to activate")
    }

    func authorize(_ request: IssuerV1.AuthorizeAppSessionRequest, context: ServerContext) async throws
        -> IssuerV1.AuthorizeAppSessionResponse
    { throw RPCError(.unimplemented, "not the wallet's to call") }

    var router: RPCRouter {
        var router = RPCRouter()
        register(on: &router)
        return router
    }
}

/// What each wallet flavour sends to open the issuer app: a table of the shapes.
@Suite struct IssuerAppOpeningTests {
    static func json(_ opening: IssuerAppOpening) throws -> [String: String] {
        let data = try #require(Data(base64Encoded: opening.activationData))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
    }

    @Test(arguments: [
        (
            WalletProvider.googlePay, CardV1.CardScheme.visa,
            [
                "tokenReferenceID": "D1", "panLast4": "0054", "tokenRequestorID": "40010075001",
            ]
        ),
        (.samsungPay, .visa, ["tokenReferenceID": "D1", "panLast4": "0054", "tokenRequestorID": "40010043095"]),
        (.googlePay, .mastercard, ["tokenUniqueReference": "D1", "accountPanSuffix": "0054"]),
        (.samsungPay, .mastercard, ["tokenUniqueReference": "D1", "accountPanSuffix": "0054"]),
    ])
    func androidWalletsSendBase64JSON(
        _ provider: WalletProvider, _ scheme: CardV1.CardScheme, _ expected: [String: String]
    ) throws {
        let opening = IssuerAppOpening.make(provider: provider, scheme: scheme, digitalCardID: "D1", panLast4: "0054")
        #expect(opening.caller == provider.caller && opening.serialNumber.isEmpty)
        #expect(try Self.json(opening) == expected)
    }

    @Test func applePaySendsThePassSerialNumber() {
        let opening = IssuerAppOpening.make(
            provider: .applePay, scheme: .visa, digitalCardID: "D1", panLast4: "0054")
        #expect(opening.caller == "paymentpass.com.apple" && opening.activationData.isEmpty)
        #expect(opening.serialNumber == WalletPass.serialNumber(of: "D1"))
        #expect(opening.serialNumber.count == 32 && opening.serialNumber != WalletPass.serialNumber(of: "D2"))
    }

    @Test func theProviderComesFromTheConfiguration() throws {
        #expect(WalletConfiguration().provider == .googlePay)
        let apple = try WalletConfiguration.parse(Data(#"{"provider": "apple-pay"}"#.utf8), path: "wallet.json")
        #expect(apple.provider == .applePay)
        #expect(throws: NodeError.self) {
            try WalletConfiguration.parse(Data(#"{"provider": "paypal"}"#.utf8), path: "wallet.json")
        }
    }
}

/// Opening the issuer app from a step-up card and hearing its answer, in memory.
@Suite struct WalletAppToAppTests {
    static let digitalCardID = "DNITHE000000000000000054"

    static func steppedUp(
        provider: WalletProvider = .googlePay, methods: [CardV1.IdvMethodType] = [.otpSms, .appToApp],
        withIssuer: Bool = true, stateVersion: UInt64 = 0
    ) async throws -> (WalletHarness, FakeIssuerApp) {
        let app = FakeIssuerApp()
        var configuration = WalletConfiguration()
        configuration.provider = provider
        let wallet = try WalletHarness(configuration: configuration, issuer: withIssuer ? app.router : nil)
        wallet.tsp.configure {
            $0.eligibility.panLast4 = "0054"
            $0.digitize = TspV1.DigitizeResponse(
                decision: .requireAdditionalAuthentication, digitalCardID: digitalCardID, tokenState: .inactive,
                tokenLast4: "3456", scheme: .visa, panLast4: "0054",
                idvMethods: methods.map { CardV1.IdvMethod(id: "\($0)", type: $0) }, stateVersion: stateVersion)
        }
        _ = try await wallet.control.addCard(WalletHarness.manual("4111111111110054"))
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        return (wallet, app)
    }

    /// A card of another issuer than the one the wallet's --issuer leads to is not sent there: its reference and
    /// last four digits went to that issuer's app, which answered NOT_FOUND.
    @Test func anotherIssuersCardIsNotSentToThisIssuersApp() async throws {
        let (wallet, app) = try await Self.steppedUp()
        let card = try wallet.store.card(ref: "card-1")
        _ = try wallet.store.database.execute(
            "UPDATE cards SET issuer_id = 'second-bank', issuer_node_id = 'issuer-2' WHERE id = ?", [card.id])
        let error = try await #require(throws: RPCError.self) {
            try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        }
        #expect(error.code == .failedPrecondition, "\(error)")
        #expect(
            error.message.hasPrefix(
                "card-1 is a card of the issuer node issuer-2, and this wallet's --issuer leads to "
                    + "tokenet://issuer/issuer-1"),
            "\(error)")
        #expect(app.opened.withLock { $0.isEmpty })
    }

    @Test func theWalletOpensTheIssuerAppWithItsActivationData() async throws {
        let (wallet, app) = try await Self.steppedUp()
        let opened = try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        #expect(opened.sessionID == "app-1" && opened.message == "card ending 0054 — sign in to activate")
        let sent = try #require(app.opened.withLock { $0.first })
        #expect(sent.caller == "com.google.android.gms" && sent.activationData == opened.activationData)
        let expected = IssuerAppOpening.make(
            provider: .googlePay, scheme: .visa, digitalCardID: Self.digitalCardID, panLast4: "0054")
        #expect(sent.activationData == expected.activationData)

        let unknown = await statusCode {
            try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1", callerOverride: "com.example.wallet"))
        }
        #expect(unknown == .permissionDenied)
        #expect(app.opened.withLock { $0.last?.caller } == "com.example.wallet")
    }

    /// An issuer node that is down was reported as an issuer app that "refused to open".
    @Test func anIssuerAppThatCannotBeReachedIsNotSaidToRefuse() async throws {
        let (wallet, _) = try await Self.steppedUp()
        await expectRPCError(
            .unavailable,
            "the issuer app could not be reached: cannot connect to 127.0.0.1:7002: connection refused; try again"
        ) {
            try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1", callerOverride: "test.unreachable"))
        }
        await expectRPCError(.permissionDenied, "the issuer app refused to open: the issuer app does not accept") {
            try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1", callerOverride: "com.example.wallet"))
        }
    }

    @Test func applePayOpensWithThePassTheIssuerAppCanFindInCurrentTokens() async throws {
        let (wallet, app) = try await Self.steppedUp(provider: .applePay)
        _ = try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        let sent = try #require(app.opened.withLock { $0.first })
        #expect(sent.caller == "paymentpass.com.apple" && sent.activationData.isEmpty)
        let tokens = try await wallet.issuerApp.currentTokens(.init())
        let pass = try #require(tokens.tokens.first { $0.passSerialNumber == sent.serialNumber })
        #expect(pass.digitalCardID == Self.digitalCardID && pass.panLast4 == "0054")
    }

    @Test func onlyAnInactiveCardWithAnInAppMethodOpensTheApp() async throws {
        let (withoutMethod, _) = try await Self.steppedUp(methods: [.otpSms])
        // With the methods the issuer did offer, and how to use one.
        let refused = try await #require(throws: RPCError.self) {
            try await withoutMethod.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        }
        #expect(refused.code == .failedPrecondition)
        #expect(
            refused.message
                == "the issuer offered no in-app method for card-1; it offered otpSms (OTP_SMS): select one (tokenet "
                + "wallet select-method WALLET_ADDR card-1 METHOD_ID)",
            "\(refused.message)")
        let (wallet, _) = try await Self.steppedUp()
        #expect(await statusCode { try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-9")) } == .notFound)
        let opened = try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        _ = try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
            .init(
                digitalCardID: Self.digitalCardID, result: .approved, tokenState: .active, sessionID: opened.sessionID))
        await expectRPCError(.failedPrecondition, "card-1 is ACTIVE; the issuer app activates only an INACTIVE card") {
            try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        }
        let (noIssuer, _) = try await Self.steppedUp(withIssuer: false)
        #expect(
            await statusCode { try await noIssuer.appToApp.openIssuerApp(.init(cardRef: "card-1")) }
                == .failedPrecondition)
    }

    @Test func approvedUpdatesTheCardAndTellsTheListenersFailureChangesNothing() async throws {
        let (wallet, _) = try await Self.steppedUp()
        let subscription = wallet.events.subscribe()
        _ = try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        let failed = try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
            .init(
                digitalCardID: Self.digitalCardID, result: .failure, reason: "declined\nin the app", sessionID: "app-1")
        )
        #expect(!failed.changed)
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .inactive)
        // The card says why it is still INACTIVE (only the log did), until the token moves on; on one line.
        let listed = try await wallet.control.listCards(.init())
        #expect(listed.cards.first?.reason == "the issuer app did not activate it: declined in the app")
        #expect(
            await statusCode {
                try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
                    .init(digitalCardID: Self.digitalCardID, result: .approved, tokenState: .active, sessionID: "app-9")
                )
            } == .failedPrecondition)
        _ = try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        let approved = try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
            .init(digitalCardID: Self.digitalCardID, result: .approved, tokenState: .active, sessionID: "app-2"))
        #expect(approved.changed)
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .active)
        #expect(try await wallet.control.listCards(.init()).cards.first?.reason == "")
        var iterator = subscription.events.makeAsyncIterator()
        let event = try #require(await iterator.next())
        #expect(event.kind == .tokenStatusChanged && event.digitalCardID == Self.digitalCardID)
        #expect(event.tokenState == .active)
        #expect(
            await statusCode {
                try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
                    .init(digitalCardID: Self.digitalCardID, result: .approved, tokenState: .active, sessionID: "app-2")
                )
            } == .failedPrecondition)
        #expect(
            await statusCode {
                try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
                    .init(digitalCardID: "DNITHE-unknown", result: .approved, tokenState: .active))
            } == .notFound)
        #expect(
            await statusCode {
                try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
                    .init(digitalCardID: Self.digitalCardID, result: .approved))
            } == .invalidArgument)
        #expect(
            await statusCode {
                try await wallet.appToApp.bankingAppActivationResponse(
                    .init(digitalCardID: Self.digitalCardID, result: .approved, tokenState: .active))
            } == .permissionDenied)
    }

    /// The TSP's CARD_STATE of the issuer suspending the token, at state version `version`.
    static func suspendedByTheIssuer(version: UInt64) -> TspV1.Notification {
        var suspended = TspV1.Notification(
            messageID: "m-1", sender: "CPS", topic: "D1_NOTIFICATION", messageType: "CARD_STATE",
            cardID: digitalCardID)
        suspended.body = .cardState(
            .init(tokenState: .suspended, reasonCode: "LOST_CARD", initiator: "issuer", stateVersion: version))
        return suspended
    }

    /// The issuer app's APPROVED can reach the wallet after a later change of the token, such as the issuer
    /// suspending it heard through CARD_STATE: the wallet keeps the later state, as the TSP holds it.
    @Test func anActivationOlderThanAStateAlreadyHeardChangesNothing() async throws {
        let (wallet, _) = try await Self.steppedUp(stateVersion: 1)
        let opened = try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        // Activated in the app (version 2), then suspended by the issuer (3), which the wallet hears first.
        try await wallet.notifications.handle(Self.suspendedByTheIssuer(version: 3))
        let subscription = wallet.events.subscribe()
        let late = try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
            .init(
                digitalCardID: Self.digitalCardID, result: .approved, tokenState: .active, sessionID: opened.sessionID,
                stateVersion: 2))
        #expect(!late.changed)
        let stored = try wallet.store.card(ref: "card-1").result
        #expect(stored?.tokenState == .suspended && stored?.stateVersion == 3)
        _ = wallet.events.publish(WalletEventHubTests.event("marker"))
        var iterator = subscription.events.makeAsyncIterator()
        #expect(await iterator.next()?.digitalCardID == "marker")
    }

    /// The issuer app's state version is not the wallet's to keep. One far ahead of the TSP's (99) outranked every
    /// CARD_STATE the TSP sent after it, and even the answer to the wallet's own delete, so the card stayed ACTIVE
    /// in the wallet while the TSP held it SUSPENDED and then DEACTIVATED. A state other than ACTIVE is left to the
    /// TSP's own CARD_STATE.
    @Test func theIssuerAppsStateVersionDoesNotOutrankTheTSPs() async throws {
        let (wallet, _) = try await Self.steppedUp(stateVersion: 1)
        var opened = try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        let suspendedByApp = try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
            .init(
                digitalCardID: Self.digitalCardID, result: .approved, tokenState: .suspended,
                sessionID: opened.sessionID, stateVersion: 50))
        #expect(!suspendedByApp.changed)
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .inactive)

        opened = try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        let approved = try await wallet.appToAppAsIssuer.bankingAppActivationResponse(
            .init(
                digitalCardID: Self.digitalCardID, result: .approved, tokenState: .active, sessionID: opened.sessionID,
                stateVersion: 99))
        #expect(approved.changed)
        var stored = try wallet.store.card(ref: "card-1").result
        #expect(stored?.tokenState == .active && stored?.stateVersion == 1)
        #expect(wallet.logs.lines.contains { $0.contains("issuer_state_version=99") })

        try await wallet.notifications.handle(Self.suspendedByTheIssuer(version: 3))
        stored = try wallet.store.card(ref: "card-1").result
        #expect(stored?.tokenState == .suspended && stored?.stateVersion == 3)
    }

    /// The TSP never changes a deleted token, so its DEACTIVATED is stored whatever version the wallet holds: a
    /// version from elsewhere cannot keep a deleted card live.
    @Test func aDeactivationIsStoredWhateverTheVersionHeld() async throws {
        let (wallet, _) = try await Self.steppedUp(stateVersion: 1)
        let card = try wallet.store.card(ref: "card-1")
        _ = try wallet.store.updateTokenState(id: card.id, state: .active, version: 99, nowMs: 1)
        #expect(
            try wallet.store.updateTokenState(id: card.id, state: .suspended, version: 4, nowMs: 2).changed == false)
        let deleted = try wallet.store.updateTokenState(id: card.id, state: .deactivated, version: 5, nowMs: 3)
        #expect(deleted.changed && deleted.card.result?.tokenState == .deactivated)
        let revived = try wallet.store.updateTokenState(id: card.id, state: .active, version: 200, nowMs: 4)
        #expect(!revived.changed && revived.card.result?.tokenState == .deactivated)
    }
}
