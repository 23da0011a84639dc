import Foundation
import Testing
import TokenetRPC
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

    @Test func oneTimeCodesAreDeliveredByTheCardsIssuer() async throws {
        let bankB = FakeIssuer()
        let bankBOTP = FakeIssuerOTP()
        let tsp = try TSPHarness.make(routes: ["bank-b": (bankB, bankBOTP)])
        try await Self.twoIssuers(tsp)
        bankB.set(.stepUpAll)
        let response = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        try #require(response.tokenState == .inactive)
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
        #expect(history.events.last?.reason.contains("UNAVAILABLE") == true, "\(history.events)")
        #expect(tsp.issuer.state.withLock { $0.authorizations } == 0)
        #expect(bankB.state.withLock { $0.authorizations } == 0)
    }
}
