import Foundation
import Testing
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// A TSP serving two issuers, each a node of its own (`tsp-node --issuer bank-b=HOST:PORT --issuer HOST:PORT`):
/// eligibility, decisions and one-time codes go to the issuer that owns the card, never to the other.
@Suite struct IssuerRoutingTests {
    static let bankBNode = PeerIdentity(role: .issuer, nodeID: "issuer-2")

    /// bank-a (the Visa range) is called at the address for every issuer; bank-b (the Mastercard range) at its own.
    static func twoIssuers(_ tsp: TSPHarness) async throws {
        try await tsp.registerIssuer(id: "bank-a", ranges: [("411111", "411111")])
        let bankB = TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: bankBNode))
        _ = try await bankB.registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: "bank-b", displayName: "Bank B", binRanges: [TspV1.BinRange(low: "555555", high: "555555")],
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
    }

    @Test func eachIssuerDecidesItsOwnCards() async throws {
        let bankB = FakeIssuer()
        let bankBOTP = FakeIssuerOTP()
        let tsp = try TSPHarness.make(routes: ["bank-b": (bankB, bankBOTP)])
        try await Self.twoIssuers(tsp)
        bankB.set(.decline("bank-b keeps this card out of wallets"))

        let visa = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.visa))
        #expect(visa.decision == .approved)
        #expect(visa.decidedBy == "issuer")
        let mastercard = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        #expect(mastercard.decision == .declined)
        #expect(mastercard.decidedBy == "issuer")
        #expect(mastercard.declineReason.contains("bank-b keeps this card out of wallets"))
        // The wallet learns whose card each is, and which node's app may see it.
        #expect(visa.issuerID == "bank-a" && visa.issuerNodeID == "issuer-1")
        #expect(mastercard.issuerID == "bank-b" && mastercard.issuerNodeID == "issuer-2")

        // Each issuer saw its own card: at eligibility and at the decision.
        #expect(tsp.issuer.state.withLock { $0.decryptedLast4 } == ["1111", "1111"])
        #expect(bankB.state.withLock { $0.decryptedLast4 } == ["4444", "4444"])
        #expect(tsp.issuer.state.withLock { $0.authorizations } == 1)
        #expect(bankB.state.withLock { $0.authorizations } == 1)
    }

    /// Both issuers registered, bank-b's at an address of its own, and a Mastercard of bank-b's digitized and
    /// waiting for its cardholder's one-time code.
    static func bankBCardAwaitingACode(
        _ bankBOTP: FakeIssuerOTP
    ) async throws -> (TSPHarness, TspV1.DigitizeResponse) {
        let bankB = FakeIssuer()
        let tsp = try TSPHarness.make(routes: ["bank-b": (bankB, bankBOTP)])
        try await twoIssuers(tsp)
        bankB.set(.stepUpAll)
        let response = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        try #require(response.tokenState == .inactive)
        return (tsp, response)
    }

    @Test func oneTimeCodesAreDeliveredByTheCardsIssuer() async throws {
        let bankBOTP = FakeIssuerOTP()
        let (tsp, response) = try await Self.bankBCardAwaitingACode(bankBOTP)
        let selected = try await tsp.idv.selectIdvMethod(
            TspV1.SelectIdvMethodRequest(digitalCardID: response.digitalCardID, methodID: "otp-sms"))
        #expect(selected.codeSent)
        #expect(bankBOTP.sent.map(\.digitalCardID) == [response.digitalCardID])
        #expect(tsp.otp.sent.isEmpty)
    }

    /// With addresses for named issuers only, an issuer registered under another id is heard of (its registration
    /// warns) and its cards are decided by the stand-in, not sent to a node that does not hold them.
    @Test func anIssuerWithNoAddressIsLeftToTheStandIn() async throws {
        let bankB = FakeIssuer()
        let tsp = try TSPHarness.make(routes: ["bank-b": (bankB, FakeIssuerOTP())], fallback: false)
        try await Self.twoIssuers(tsp)
        #expect(
            tsp.logs.lines.contains {
                $0.contains("no address for this issuer (tsp-node --issuer bank-a=HOST:PORT)")
            }, "\(tsp.logs.lines)")
        #expect(!tsp.logs.lines.contains { $0.contains("--issuer bank-b=") })

        let visa = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.visa))
        #expect(visa.decidedBy == "stand-in")
        let history = try await tsp.control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: visa.digitalCardID))
        #expect(history.events.last?.reason.contains("the issuer could not be reached") == true, "\(history.events)")
        #expect(tsp.issuer.state.withLock { $0.authorizations } == 0)
        #expect(bankB.state.withLock { $0.authorizations } == 0)
    }

    /// A TSP restarted without the address of an issuer that registered before says so at start, rather than when
    /// the issuer registers again; an address for an issuer that has not registered is noted.
    @Test func aRestartLeavingARegisteredIssuerWithoutAnAddressSaysSoAtStart() async throws {
        let first = try TSPHarness.make()
        try await first.registerIssuer()
        #expect(!first.logs.lines.contains { $0.contains("no address for registered issuer") })

        let restarted = try TSPHarness.make(
            directory: first.directory, routes: ["bank-z": (FakeIssuer(), FakeIssuerOTP())], fallback: false)
        let lines = restarted.logs.lines
        #expect(
            lines.contains {
                $0.contains("no address for registered issuer bank-a (tsp-node --issuer bank-a=HOST:PORT)")
            },
            "\(lines)")
        #expect(
            lines.contains { $0.contains("an address is given for issuer bank-z, which has not registered") },
            "\(lines)")

        let withAddress = try TSPHarness.make(directory: first.directory)
        #expect(!withAddress.logs.lines.contains { $0.contains("no address for registered issuer") })
    }

    /// Swapped routes: bank-b's address leads to bank-a's node (issuer-1) and the address for every other issuer to
    /// bank-b's (issuer-2). The certificates' role is right both ways; the node ids are not. Neither node is sent
    /// anything, not even the eligibility question: each issuer counts as unreachable, the stand-in decides, and the
    /// TSP's log names the issuer and both nodes.
    @Test func aRouteToAnotherIssuersNodeSendsItNothing() async throws {
        let bankB = FakeIssuer()
        let tsp = try TSPHarness.make(
            routes: ["bank-b": (bankB, FakeIssuerOTP())], fallbackNodeID: "issuer-2", routedNodeID: "issuer-1")
        try await Self.twoIssuers(tsp)

        let visa = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.visa))
        #expect(visa.decidedBy == "stand-in")
        let mastercard = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        #expect(mastercard.decidedBy == "stand-in")
        let history = try await tsp.control.tokenHistory(
            TspV1.TokenHistoryRequest(digitalCardID: mastercard.digitalCardID))
        #expect(history.events.last?.reason.contains("the issuer could not be reached") == true, "\(history.events)")

        #expect(tsp.issuer.state.withLock { $0.decryptedLast4 }.isEmpty)
        #expect(bankB.state.withLock { $0.decryptedLast4 }.isEmpty)
        #expect(tsp.issuer.state.withLock { $0.authorizations } == 0)
        #expect(bankB.state.withLock { $0.authorizations } == 0)
        let refused = tsp.logs.lines.filter { $0.contains("the issuer's address leads to another node") }
        #expect(
            refused.contains {
                $0.contains("issuer=bank-b") && $0.contains("registered_node=issuer-2")
                    && $0.contains("answering_node=issuer-1") && $0.contains("--issuer bank-b=HOST:PORT")
            }, "\(tsp.logs.lines)")
        #expect(
            refused.contains {
                $0.contains("issuer=bank-a") && $0.contains("registered_node=issuer-1")
                    && $0.contains("answering_node=issuer-2")
            }, "\(tsp.logs.lines)")
    }

    /// A one-time code is a secret of the card's issuer: a route to another node does not deliver it.
    @Test func aRouteToAnotherIssuersNodeDeliversNoCode() async throws {
        let bankBOTP = FakeIssuerOTP()
        let (tsp, response) = try await Self.bankBCardAwaitingACode(bankBOTP)

        // bank-b is now registered by another node (issuer-3): its address leads to a node that is not bank-b's.
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        _ = try database.execute("UPDATE issuers SET peer_node_id = 'issuer-3' WHERE id = 'bank-b'")
        await expectRPCError(.unavailable, "could not deliver the code") {
            try await tsp.idv.selectIdvMethod(
                TspV1.SelectIdvMethodRequest(digitalCardID: response.digitalCardID, methodID: "otp-sms"))
        }
        #expect(bankBOTP.sent.isEmpty)
    }
}
