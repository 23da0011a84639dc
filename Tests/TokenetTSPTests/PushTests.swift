import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// Issuer push receipts (Mastercard) and wallet push sessions: single use, expiring, bound to their owner (a receipt
/// to the wallet account the issuer pushed it to, when it named one).
@Suite struct PushTests {
    func pushReceipt(_ tsp: TSPHarness, pan: String = TSPHarness.mastercard, account: String = "") async throws
        -> TspV1.CreatePushReceiptResponse
    {
        try await tsp.issuers.createPushReceipt(
            TspV1.CreatePushReceiptRequest(
                encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(pan)), walletAccountID: account))
    }

    @Test func pushReceiptIsRedeemedOnceThenRefused() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let receipt = try await pushReceipt(tsp)
        #expect(receipt.scheme == .mastercard)
        #expect(receipt.payload.count >= 40)
        #expect(receipt.expiresAtMs == tsp.clock.now.unixMilliseconds + 15 * 60 * 1000)
        let instrument = TspV1.CheckEligibilityRequest.Instrument.issuerPushReceipt(
            TspV1.IssuerPushReceipt(scheme: .mastercard, payload: receipt.payload))
        let eligibility = try await tsp.checkEligibility(instrument)
        #expect(eligibility.eligible)
        #expect(eligibility.panLast4 == "4444")
        let token = try await tsp.digitize(eligibility)
        #expect(token.decision == .approved)
        await expectRPCError(.failedPrecondition, "already used") { try await tsp.checkEligibility(instrument) }
    }

    /// A push session made for an issuer node's push holds a card of that node's issuer only, as a push receipt
    /// does: one bank's node pushed another bank's card, which was digitized as the other bank's token.
    @Test func aPushSessionHoldsACardOfThePushingIssuerOnly() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        func session(_ pan: String, pushedBy node: String) async throws -> TspV1.CreatePushSessionResponse {
            try await tsp.wallet.createPushSession(
                .init(
                    encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(pan)),
                    walletAccountID: TSPHarness.account, pushingIssuerNodeID: node))
        }
        #expect(try await !session(TSPHarness.visa, pushedBy: "issuer-1").pushSessionID.isEmpty)
        // A node that registered no issuer is told so, not about BIN ranges it never had.
        await expectRPCError(.permissionDenied, "issuer node issuer-2 has registered no issuer with this TSP") {
            try await session(TSPHarness.visa, pushedBy: "issuer-2")
        }
        await expectRPCError(.permissionDenied, "the card ending in 0009 is not in a BIN range that issuer node") {
            try await session("4761000010000009", pushedBy: "issuer-1")
        }
    }

    /// A refusal spends neither a push receipt nor a push session: the next try is told the refusal again, and adds
    /// the card once what stood in its way is gone. Spent, a receipt refused for a card already in the wallet could
    /// not add it after the cardholder removed the old one ("already used; each receipt adds a card once").
    @Test func aRefusalLeavesThePushReceiptAndSessionUnused() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let receipt = try await pushReceipt(tsp)
        let session = try await tsp.wallet.createPushSession(
            .init(
                encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa)),
                walletAccountID: TSPHarness.account))
        let instruments: [TspV1.CheckEligibilityRequest.Instrument] = [
            .issuerPushReceipt(TspV1.IssuerPushReceipt(scheme: .mastercard, payload: receipt.payload)),
            .pushSessionID(session.pushSessionID),
        ]
        tsp.issuer.state.withLock {
            $0.eligible = false
            $0.eligibilityReason = "the card is blocked"
        }
        for instrument in instruments {
            for _ in 0..<2 {
                let refused = try await tsp.checkEligibility(instrument)
                #expect(!refused.eligible)
                #expect(refused.reasonMessage.contains("the card is blocked"), "\(refused.reasonMessage)")
            }
        }
        tsp.issuer.state.withLock { $0.eligible = true }
        for instrument in instruments {
            #expect(try await tsp.checkEligibility(instrument).eligible)
            await expectRPCError(.failedPrecondition, "already used") { try await tsp.checkEligibility(instrument) }
        }
    }

    @Test func pushReceiptForOneWalletAccountIsRefusedToAnother() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let receipt = try await pushReceipt(tsp, account: TSPHarness.account)
        let instrument = TspV1.CheckEligibilityRequest.Instrument.issuerPushReceipt(
            TspV1.IssuerPushReceipt(scheme: .mastercard, payload: receipt.payload))
        await expectRPCError(.permissionDenied, "issued for another wallet account, not \"account-2\"") {
            try await tsp.checkEligibility(instrument, account: "account-2")
        }
        #expect(!tsp.logs.lines.contains { $0.contains(TSPHarness.mastercard) })
        // The refusal leaves the receipt unused for the account it was pushed to.
        let eligibility = try await tsp.checkEligibility(instrument)
        #expect(eligibility.eligible && eligibility.panLast4 == "4444")

        // Pushed without an account, a receipt is for whichever wallet account redeems it first.
        let open = try await pushReceipt(tsp)
        #expect(
            try await tsp.checkEligibility(
                .issuerPushReceipt(.init(scheme: .mastercard, payload: open.payload)), account: "account-2"
            ).eligible)
    }

    /// A receipt the issuer made for one wallet node (as a push names its token requestor) is refused to any
    /// other, whatever account it names, and stays for its own: another wallet node naming the same account made
    /// an ACTIVE token of it, and the wallet the issuer pushed to found the receipt used.
    @Test func aReceiptForOneWalletNodeIsRefusedToAnother() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let receipt = try await tsp.issuers.createPushReceipt(
            TspV1.CreatePushReceiptRequest(
                encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.mastercard)),
                walletAccountID: TSPHarness.account, walletNodeID: "wallet-1"))
        let instrument = TspV1.CheckEligibilityRequest.Instrument.issuerPushReceipt(
            TspV1.IssuerPushReceipt(scheme: .mastercard, payload: receipt.payload))
        for account in [TSPHarness.account, "account-3"] {
            await expectRPCError(.permissionDenied, "issued for another wallet node, and stays unused") {
                try await Self.checkEligibility(tsp, asWallet: "wallet-2", account: account, instrument)
            }
        }
        #expect(try await tsp.checkEligibility(instrument).eligible)
        // What no certificate's ID can be bound a receipt to no node: nobody could redeem it.
        for id in [
            "wallet 1\n", "tokenet://wallet/wallet-1", "wallet/wallet-1", "é", String(repeating: "w", count: 65),
        ] {
            await expectRPCError(.invalidArgument, "wallet_node_id must be the ID in the wallet node's certificate") {
                try await tsp.issuers.createPushReceipt(
                    TspV1.CreatePushReceiptRequest(
                        encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.mastercard)),
                        walletNodeID: id))
            }
        }
    }

    /// A receipt or a session for an account id no wallet could hold (spaces, control characters, too long) is
    /// refused when it is made: it was made, and could never be redeemed.
    @Test(arguments: ["a b", "acct\u{1B}[31m", String(repeating: "a", count: 65)])
    func anAccountIDNoWalletCouldHoldIsRefused(account: String) async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        await expectRPCError(.invalidArgument, "wallet_account_id must be 1 to 64 characters") {
            try await pushReceipt(tsp, account: account)
        }
        await expectRPCError(.invalidArgument, "wallet_account_id must be 1 to 64 characters") {
            try await tsp.wallet.createPushSession(
                TspV1.CreatePushSessionRequest(
                    encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.mastercard)),
                    walletAccountID: account))
        }
    }

    /// The TSP has no list of wallet accounts to check a receipt's account against when the issuer pushes it (an
    /// account shows only once a wallet asked for a card for it), so a receipt for an account no wallet has is made,
    /// and refused when a wallet redeems it, with what the person can do and the receipt left unused.
    @Test func aReceiptForAnAccountNoWalletHasIsRefusedAtRedemptionWithWhatToDo() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let receipt = try await pushReceipt(tsp, account: "no-such-account")
        let instrument = TspV1.CheckEligibilityRequest.Instrument.issuerPushReceipt(
            TspV1.IssuerPushReceipt(scheme: .mastercard, payload: receipt.payload))
        await expectRPCError(
            .permissionDenied,
            "the push receipt was issued for another wallet account, not \"\(TSPHarness.account)\", and stays unused: "
                + "add the card from the wallet account the issuer pushed it to, or ask the issuer to push the card "
                + "to \"\(TSPHarness.account)\""
        ) { try await tsp.checkEligibility(instrument) }
        await expectRPCError(.permissionDenied, "stays unused") {
            try await tsp.checkEligibility(instrument, account: "account-2")
        }
        #expect(try await tsp.checkEligibility(instrument, account: "no-such-account").eligible)
    }

    @Test func pushReceiptErrors() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        await expectRPCError(.notFound, "unknown") {
            try await tsp.checkEligibility(.issuerPushReceipt(.init(scheme: .mastercard, payload: "nope")))
        }
        await expectRPCError(.invalidArgument, "Mastercard-only") {
            try await tsp.checkEligibility(.issuerPushReceipt(.init(scheme: .visa, payload: "anything")))
        }
        // A scheme no one declared is no Visa card.
        await expectRPCError(.invalidArgument, "issuer_push_receipt.scheme 999 is not a card scheme") {
            try await tsp.checkEligibility(.issuerPushReceipt(.init(scheme: .init(rawValue: 999), payload: "x")))
        }
        let receipt = try await pushReceipt(tsp)
        tsp.clock.advance(seconds: 15 * 60)
        await expectRPCError(.failedPrecondition, "expired") {
            try await tsp.checkEligibility(.issuerPushReceipt(.init(scheme: .mastercard, payload: receipt.payload)))
        }
    }

    @Test func pushReceiptOnlyForTheIssuersOwnMastercard() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        await expectRPCError(.failedPrecondition, "Mastercard-only") {
            try await pushReceipt(tsp, pan: TSPHarness.visa)
        }
        await expectRPCError(.permissionDenied, "not in a BIN range") {
            try await pushReceipt(tsp, pan: "5105105105105100")
        }
        let otherNode = TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: .init(role: .issuer, nodeID: "x")))
        await expectRPCError(.permissionDenied, "not in a BIN range") {
            try await otherNode.createPushReceipt(
                .init(encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.mastercard))))
        }
        await expectRPCError(.invalidArgument, "encrypted_card_data") {
            try await tsp.issuers.createPushReceipt(.init(encryptedCardData: .init(jwe: "a.b.c.d.e")))
        }
    }

    @Test func pushSessionIsSingleUseAndBoundToItsAccount() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        func session() async throws -> TspV1.CreatePushSessionResponse {
            try await tsp.wallet.createPushSession(
                .init(
                    encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa)),
                    walletAccountID: TSPHarness.account))
        }
        let first = try await session()
        #expect(first.expiresAtMs == tsp.clock.now.unixMilliseconds + 15 * 60 * 1000)
        let eligibility = try await tsp.checkEligibility(.pushSessionID(first.pushSessionID))
        #expect(eligibility.eligible)
        #expect(eligibility.scheme == .visa)
        await expectRPCError(.failedPrecondition, "already used") {
            try await tsp.checkEligibility(.pushSessionID(first.pushSessionID))
        }
        await expectRPCError(.notFound, "unknown") { try await tsp.checkEligibility(.pushSessionID("nope")) }
        let second = try await session()
        await expectRPCError(.permissionDenied, "another wallet account") {
            try await tsp.checkEligibility(.pushSessionID(second.pushSessionID), account: "account-2")
        }
        tsp.clock.advance(seconds: 15 * 60)
        await expectRPCError(.failedPrecondition, "expired") {
            try await tsp.checkEligibility(.pushSessionID(second.pushSessionID))
        }
        await expectRPCError(.invalidArgument, "wallet_account_id") {
            try await tsp.wallet.createPushSession(
                .init(encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))))
        }
    }

    /// CheckEligibility for the harness's wallet account, from the wallet node `nodeID`.
    static func checkEligibility(
        _ tsp: TSPHarness, asWallet nodeID: String, account: String = TSPHarness.account,
        _ instrument: TspV1.CheckEligibilityRequest.Instrument
    ) async throws -> TspV1.CheckEligibilityResponse {
        try await TspV1.Provisioning.Client(
            TSPHarness.connect(tsp.router, as: PeerIdentity(role: .wallet, nodeID: nodeID))
        ).checkEligibility(
            TspV1.CheckEligibilityRequest(
                requestID: UUID().uuidString,
                eligibilityData: TspV1.EligibilityData(language: "en-US", inputMethod: .manual),
                walletAccountID: account, device: TSPHarness.device, instrument: instrument))
    }

    /// A TSP with its issuer registered, and a push session wallet-1 made for its account.
    static func sessionPushedToWallet1() async throws -> (TSPHarness, TspV1.CreatePushSessionResponse) {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let session = try await tsp.wallet.createPushSession(
            .init(
                encryptedCardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa)),
                walletAccountID: TSPHarness.account))
        return (tsp, session)
    }

    /// A push is BANK_APP whatever the wallet says, so it needs no input method: the TSP records it itself.
    @Test func aPushNeedsNoInputMethod() async throws {
        let (tsp, session) = try await Self.sessionPushedToWallet1()
        let checked = try await tsp.wallet.checkEligibility(
            TspV1.CheckEligibilityRequest(
                requestID: UUID().uuidString, walletAccountID: TSPHarness.account, device: TSPHarness.device,
                instrument: .pushSessionID(session.pushSessionID)))
        #expect(checked.eligible)
    }

    /// A push session is the wallet node's that made it: another wallet node whose account has the same name cannot
    /// redeem it (it added the card, and the wallet the issuer pushed to found the session used), and the session
    /// stays for its own wallet.
    @Test func aPushSessionIsRedeemedOnlyByTheWalletNodeThatMadeIt() async throws {
        let (tsp, session) = try await Self.sessionPushedToWallet1()
        // Whatever account it names: the node is told first, since making the account active there cannot help.
        for account in [TSPHarness.account, "account-3"] {
            await expectRPCError(.permissionDenied, "was made for another wallet node, and stays unused") {
                try await Self.checkEligibility(
                    tsp, asWallet: "wallet-2", account: account, .pushSessionID(session.pushSessionID))
            }
        }
        #expect(try await tsp.checkEligibility(.pushSessionID(session.pushSessionID)).eligible)
        // Once used, it is told used to anyone: "stays unused" was wrong then.
        await expectRPCError(.failedPrecondition, "was already used") {
            try await Self.checkEligibility(tsp, asWallet: "wallet-2", .pushSessionID(session.pushSessionID))
        }
    }

    /// A wallet that gives up while the TSP asks the issuer (its deadline passes, a slow issuer) is told nothing, so
    /// its push session must still add the card at its next try: it is spent with the answer, not before. Spent
    /// when it was read, it came back "already used", and the issuer had to push the card again.
    @Test func aPushSessionOutlivesACheckItsWalletGaveUpOn() async throws {
        let (tsp, session) = try await Self.sessionPushedToWallet1()
        tsp.issuer.state.withLock { $0.slowEligibility = true }
        let request = TspV1.CheckEligibilityRequest(
            requestID: UUID().uuidString,
            eligibilityData: TspV1.EligibilityData(language: "en-US", inputMethod: .manual),
            walletAccountID: TSPHarness.account, device: TSPHarness.device,
            instrument: .pushSessionID(session.pushSessionID))
        // The wallet gives up once the TSP is asking the issuer (a deadline alone could pass, on a loaded machine,
        // before the handler got that far).
        let wallet = tsp.wallet
        let check = Task { try await wallet.checkEligibility(request) }
        for _ in 0..<6000 where tsp.issuer.state.withLock({ $0.decryptedLast4.isEmpty }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(tsp.issuer.state.withLock { $0.decryptedLast4.count } == 1)
        check.cancel()
        let ended = await check.result
        #expect((try? ended.get()) == nil, "the check was answered")
        tsp.issuer.state.withLock { $0.slowEligibility = false }
        // The caller's giving up is no failure of the TSP's: said at info level, no error logged.
        let gaveUp = "eligibility check ended by its caller before an answer"
        // The handler hears of the cancellation in its own time: a minute at most on a machine the suite loads.
        for _ in 0..<6000 where !tsp.logs.lines.contains(where: { $0.contains(gaveUp) }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(tsp.logs.lines.contains { $0.contains(gaveUp) }, "\(tsp.logs.lines)")
        let errors = tsp.logs.lines.filter { $0.split(separator: " ").dropFirst().first == "error" }
        #expect(errors.isEmpty, "\(errors)")
        let eligibility = try await tsp.checkEligibility(.pushSessionID(session.pushSessionID))
        #expect(eligibility.eligible)
        await expectRPCError(.failedPrecondition, "already used") {
            try await tsp.checkEligibility(.pushSessionID(session.pushSessionID))
        }
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        #expect(try database.queryOne("SELECT count(*) FROM eligibility_receipts")?.int(0) == 1)
    }
}
