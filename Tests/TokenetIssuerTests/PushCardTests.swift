import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetWire

@testable import TokenetIssuer
@testable import TokenetRPC

@Suite struct PushCardTests {
    let tsp: FakeTSP
    let wallet: FakeWallet
    let sink = MemoryLogSink()
    let party: IssuerParty
    let control: IssuerV1.IssuerControl.Client

    init() throws {
        tsp = FakeTSP(key: try Support.tspKey())
        wallet = FakeWallet(tspKey: try Support.tspKey())
        party = try Support.party(
            tsp: Support.connect(tsp.router, as: .issuer), wallet: Support.connect(wallet.router, as: .issuer),
            sink: sink)
        control = IssuerV1.IssuerControl.Client(Support.connect(Support.router(party), as: .operator))
    }

    func push(_ cardID: String, _ mode: IssuerV1.PushMode) async throws -> IssuerV1.PushCardResponse {
        try await control.pushCard(IssuerV1.PushCardRequest(cardID: cardID, mode: mode, walletAccountID: "wa-1"))
    }

    /// A TSP that does not answer a push receipt is said by the issuer before the operator's deadline, with what
    /// may have happened, where the operator got a bare "the deadline passed". Run inside a served call's context
    /// with no server around it, so that only the TSP call's own timer can end it.
    @Test func aReceiptTheTSPDoesNotAnswerIsSaidInTime() async throws {
        try await party.tsp.register()
        tsp.state.withLock { $0.hangReceipts = true }
        let served = ServerContext(
            method: "/tokenet.issuer.v1.IssuerControl/PushCard", metadata: Metadata(), peer: nil,
            // 10 s, not 2: on a machine busy with the whole suite, 2 s had passed before the receipt's call began.
            deadline: .now + .seconds(10), traceID: "0000000000000ab")
        do {
            _ = try await ServerContext.$current.withValue(served) {
                try await party.control.pushCard(
                    IssuerV1.PushCardRequest(cardID: Cards.mcReceipt.0, mode: .receipt), context: served)
            }
            Issue.record("the push succeeded")
        } catch let error as RPCError {
            #expect(error.code == .deadlineExceeded)
            #expect(
                error.message.hasPrefix(
                    "the TSP did not answer CreatePushReceipt within this call's deadline; it may "),
                "\(error.message)")
        }
    }

    @Test func listsMaskedCards() async throws {
        let cards = try await control.listCards(IssuerV1.ListCardsRequest()).cards
        #expect(cards.map(\.cardID) == Cards.all.map(\.0).sorted())
        let receipt = try #require(cards.first { $0.cardID == Cards.mcReceipt.0 })
        #expect(receipt.maskedPAN == "************0037")
        #expect(receipt.scheme == .mastercard)
        #expect(receipt.expiry == "06/30")
        #expect(receipt.accountID == "acc-alice-credit")
        #expect(receipt.digitizationRule == "approve")
    }

    @Test func receiptModeAsksTheTSPWithTheCardEncryptedToItsKey() async throws {
        let response = try await push(Cards.mcReceipt.0, .receipt)
        #expect(
            response.result
                == .receipt(
                    IssuerV1.PushReceipt(scheme: .mastercard, payload: "receipt-1", expiresAtMs: 1_790_000_600_000)))
        let sent = try #require(tsp.state.withLock { $0.receiptCards }.first)
        #expect(sent.accountNumber == Cards.mcReceipt.1)
        #expect(sent.expirationDate == CardData.ExpirationDate(month: "06", year: "2030"))
        #expect(sent.cvv2 == "456")
        #expect(sent.name == "ALICE MARTIN")
        // The receipt is for the wallet account the operator named; only that account can redeem it at the TSP.
        #expect(tsp.state.withLock { $0.receiptAccounts } == ["wa-1"])
        // Without an earlier registration, the issuer registered to learn the TSP's key.
        #expect(tsp.state.withLock { $0.registrations.count } == 1)
    }

    /// The wallet node a receipt is for goes to the TSP, which refuses it to every other node; a session is the
    /// wallet node's the issuer pushes it to, so naming one there is refused.
    @Test func aReceiptNamesItsWalletNodeAndASessionTakesNone() async throws {
        _ = try await control.pushCard(
            IssuerV1.PushCardRequest(
                cardID: Cards.mcReceipt.0, mode: .receipt, walletAccountID: "wa-1", walletNodeID: "wallet-1"))
        #expect(tsp.state.withLock { $0.receiptWalletNodes } == ["wallet-1"])
        let error = await Support.rpcError {
            _ = try await control.pushCard(
                IssuerV1.PushCardRequest(
                    cardID: Cards.visaApprove.0, mode: .session, walletAccountID: "wa-1", walletNodeID: "wallet-1"))
        }
        #expect(error?.code == .invalidArgument)
        #expect(
            error?.message.contains("wallet_node_id is for PUSH_MODE_RECEIPT") == true, "\(String(describing: error))")
    }

    @Test func receiptModeRefusesVisaLocally() async throws {
        let error = await Support.rpcError { _ = try await push(Cards.visaApprove.0, .receipt) }
        #expect(error?.code == .failedPrecondition)
        #expect(error?.message.hasPrefix(IssuerControlService.receiptSchemeRefusal) == true)
        #expect(tsp.state.withLock { $0.receiptCards.isEmpty })
    }

    @Test func sessionModePushesToTheWalletBackend() async throws {
        let response = try await push(Cards.visaSession.0, .session)
        #expect(response.result == .pushSessionID("push-session-1"))
        let pushed = wallet.pushed.withLock { $0 }
        #expect(pushed.map(\.0.accountNumber) == [Cards.visaSession.1])
        #expect(pushed.map(\.1) == ["wa-1"])
        let rows = try party.store.database.query("SELECT card_id, mode FROM pushes")
        #expect(try rows.map { "\(try $0.text("card_id")) \(try $0.text("mode"))" } == ["card-visa-session SESSION"])
    }

    @Test func refusalsSayWhatToDo() async throws {
        let unknown = await Support.rpcError { _ = try await push("card-nope", .session) }
        #expect(unknown?.code == .notFound)
        let noMode = await Support.rpcError { _ = try await push(Cards.visaSession.0, .unspecified) }
        #expect(noMode?.code == .invalidArgument)
        let alone = try Support.party()
        let aloneControl = IssuerV1.IssuerControl.Client(Support.connect(Support.router(alone), as: .operator))
        let noWallet = await Support.rpcError {
            _ = try await aloneControl.pushCard(IssuerV1.PushCardRequest(cardID: Cards.visaSession.0, mode: .session))
        }
        #expect(noWallet?.code == .failedPrecondition)
        #expect(noWallet?.message.contains("--wallet") == true)
        let tspOnly = IssuerV1.IssuerControl.Client(Support.connect(Support.router(party), as: .tsp))
        let denied = await Support.rpcError { _ = try await tspOnly.listCards(IssuerV1.ListCardsRequest()) }
        #expect(denied?.code == .permissionDenied)
    }

    /// The TSP's own refusal reaches the operator unchanged.
    @Test func theTSPsRefusalPassesThrough() async throws {
        tsp.state.withLock { $0.refusal = RPCError(.resourceExhausted, "too many push receipts for this issuer") }
        let error = await Support.rpcError { _ = try await push(Cards.mcReceipt.0, .receipt) }
        #expect(error?.code == .resourceExhausted)
        #expect(error?.message == "too many push receipts for this issuer")
        #expect(try party.store.database.query("SELECT * FROM pushes").isEmpty)
    }

    /// The wallet backend's answer is said as its: it names the wallet's own links ("the tsp-node at … (--tsp)",
    /// the wallet's --tsp), which read as the issuer's own.
    @Test func theWalletBackendsRefusalIsSaidAsItsOwn() async throws {
        wallet.refusal.withLock {
            $0 = RPCError(
                .unavailable,
                "the TSP's CreatePushSession failed: cannot connect to the tsp-node at 127.0.0.1:1 (--tsp)")
        }
        let error = await Support.rpcError { _ = try await push(Cards.visaSession.0, .session) }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message
                == "the wallet backend answered: the TSP's CreatePushSession failed: cannot connect to the tsp-node at "
                + "127.0.0.1:1 (--tsp)")
        #expect(try party.store.database.query("SELECT * FROM pushes").isEmpty)
    }

    /// A push session needs the TSP's key first, which this node asks the TSP for: a TSP that cannot give it is the
    /// issuer's own link, not the wallet backend's answer (it read "the wallet backend answered: the issuer is not
    /// registered with the TSP yet: …" with no wallet running).
    @Test func theIssuersOwnTSPFailureIsNotSaidAsTheWalletBackends() async throws {
        var router = RPCRouter()
        router.unary(TspV1.Issuers.registerIssuer) { (_, _) async throws -> TspV1.RegisterIssuerResponse in
            throw RPCError(.unavailable, "the TSP is starting")
        }
        let alone = try Support.party(
            tsp: Support.connect(router, as: .issuer), wallet: Support.connect(wallet.router, as: .issuer),
            sink: MemoryLogSink())
        let aloneControl = IssuerV1.IssuerControl.Client(Support.connect(Support.router(alone), as: .operator))
        let error = await Support.rpcError {
            _ = try await aloneControl.pushCard(
                IssuerV1.PushCardRequest(cardID: Cards.visaSession.0, mode: .session, walletAccountID: "wa-1"))
        }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message.hasPrefix("the issuer is not registered with the TSP yet") == true,
            "\(String(describing: error))")
    }

    /// A wallet backend that refused the push as it began to stop is named, with nothing done: the bare "the node is
    /// shutting down (call not processed)" read as the issuer's own, which was running.
    @Test func aStoppingWalletBackendIsNamed() async throws {
        // Every call refused as a stopping node refuses it (its goaway came first).
        let walletStopping = UnreachableSwitch(
            Support.connect(wallet.router, as: .issuer),
            refusal: RPCError(.unavailable, "the node is shutting down (call not processed)", cause: CallNotProcessed())
        )
        walletStopping.set(unreachable: true)
        let stopping = try Support.party(
            tsp: Support.connect(tsp.router, as: .issuer), wallet: walletStopping, sink: sink)
        let client = IssuerV1.IssuerControl.Client(Support.connect(Support.router(stopping), as: .operator))
        let error = await Support.rpcError {
            _ = try await client.pushCard(
                IssuerV1.PushCardRequest(cardID: Cards.visaSession.0, mode: .session, walletAccountID: "wa-1"))
        }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message
                == "the wallet backend is shutting down and did not take the push, so nothing was done: try again "
                + "once it is back")
    }

    /// Every flow the issuer runs, then its log: no card number, not even masked to its last four.
    @Test func cardNumbersNeverReachTheLog() async throws {
        _ = try await control.listCards(IssuerV1.ListCardsRequest())
        _ = try await push(Cards.mcReceipt.0, .receipt)
        _ = try await push(Cards.visaSession.0, .session)
        _ = await Support.rpcError { _ = try await push(Cards.visaApprove.0, .receipt) }
        let decisions = IssuerV1.IssuerDecisions.Client(Support.connect(Support.router(party), as: .tsp))
        for (index, (_, number, expiry)) in (Cards.all + [("", "4761000050000000", "12/29")]).enumerated() {
            let encrypted = try Support.encrypted(number, expiry: expiry, to: party.key)
            _ = try await decisions.checkCardEligibility(IssuerV1.CardEligibilityRequest(encryptedCardData: encrypted))
            _ = try await decisions.authorizeDigitization(
                IssuerV1.AuthorizeDigitizationRequest(
                    encryptedCardData: encrypted, digitalCardID: "DNITHE00000000\(index)"))
        }
        let lines = sink.lines
        #expect(lines.count >= 18)
        for line in lines {
            for (_, number, _) in Cards.all {
                #expect(!line.contains(number))
            }
            #expect(!line.contains("************"), "a masked card number was logged: \(line)")
        }
    }
}
