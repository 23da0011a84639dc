import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// A wallet may delete a token the issuer or the TSP suspended, but adding the card again must not lift their
/// suspension: the TSP tells the issuer of it (`held_suspension`), and its stand-in declines such a card.
@Suite struct HeldSuspensionTests {
    /// The Visa card added again in the default wallet account on `device`: the digitization's answer.
    static func addAgain(
        _ tsp: TSPHarness, device: CardV1.DeviceInfo = TSPHarness.device
    ) async throws -> TspV1.DigitizeResponse {
        let eligibility = try await tsp.checkEligibility(
            .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))), device: device)
        try #require(eligibility.eligible)
        return try await tsp.digitize(eligibility, device: device)
    }

    /// What the issuer was told with its latest AuthorizeDigitization.
    static func lastHeld(_ tsp: TSPHarness) throws -> IssuerV1.HeldSuspension? {
        let told = tsp.issuer.state.withLock { $0.heldSuspensions }
        return try #require(told.last)
    }

    static func suspendByIssuer(_ tsp: TSPHarness, _ id: String, _ reason: String = "FRAUD_SUSPECTED") async throws {
        let issuer = LifecycleTests.lifecycle(tsp, as: LifecycleTests.issuer1)
        let result = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .suspend, reasonCode: reason))
        try #require(result.results.map(\.statusCode) == [0])
    }

    static func delete(_ tsp: TSPHarness, _ id: String) async throws {
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        let deleted = try await wallet.changeTokenState(LifecycleTests.change(id, .delete))
        try #require(deleted.tokenState == .deactivated)
    }

    @Test func theIssuerIsToldOfItsSuspensionOfADeletedTokenUntilANewTokenIsActivated() async throws {
        let tsp = try TSPHarness.make()
        let first = try await LifecycleTests.activeToken(tsp)
        #expect(try Self.lastHeld(tsp) == nil)
        try await Self.suspendByIssuer(tsp, first)
        try await Self.delete(tsp, first)

        // Declined: the attempt lifts nothing, and the next one is told again.
        tsp.issuer.set(.decline("not now"))
        let declined = try await Self.addAgain(tsp)
        #expect(declined.decision == .declined)
        let held = try #require(try Self.lastHeld(tsp))
        #expect(held.digitalCardID == first)
        #expect(held.suspendedBy == "issuer:bank-a" && held.reason == "FRAUD_SUSPECTED")
        #expect(held.deleted && held.deletedAtMs >= held.suspendedAtMs && held.suspendedAtMs > 0)

        tsp.issuer.set(.approve)
        let approved = try await Self.addAgain(tsp)
        #expect(approved.tokenState == .active)
        #expect(try Self.lastHeld(tsp)?.digitalCardID == first)
        #expect(
            tsp.logs.lines.contains {
                $0.contains("a suspension of the card stands in this wallet account; the issuer is told")
            })

        // The issuer let the card live in the wallet again: deleted now, while ACTIVE, it holds nothing.
        try await Self.delete(tsp, approved.digitalCardID)
        _ = try await Self.addAgain(tsp)
        #expect(try Self.lastHeld(tsp) == nil)
    }

    @Test func theWalletsOwnSuspensionHoldsNothing() async throws {
        let tsp = try TSPHarness.make()
        let first = try await LifecycleTests.activeToken(tsp)
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        _ = try await wallet.changeTokenState(LifecycleTests.change(first, .suspend))
        try await Self.delete(tsp, first)
        _ = try await Self.addAgain(tsp)
        #expect(try Self.lastHeld(tsp) == nil)
    }

    /// The issuer's suspension still holds when the wallet's own came after it: the wallet's, the latest move to
    /// SUSPENDED, stands beside the issuer's, and deleting the token then must not lift the issuer's.
    @Test func theIssuersSuspensionHoldsBesideTheWalletsLaterOne() async throws {
        let tsp = try TSPHarness.make()
        let first = try await LifecycleTests.activeToken(tsp)
        try await Self.suspendByIssuer(tsp, first, "LOST_CARD")
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        let placed = try await wallet.changeTokenState(LifecycleTests.change(first, .suspend, "DEVICE_LOST"))
        #expect(placed.tokenState == .suspended)
        try await Self.delete(tsp, first)
        tsp.issuer.set(.decline("not now"))
        _ = try await Self.addAgain(tsp)
        let held = try #require(try Self.lastHeld(tsp))
        #expect(held.digitalCardID == first && held.suspendedBy == "issuer:bank-a" && held.reason == "LOST_CARD")
        #expect(held.deleted)
    }

    /// The TSP's suspension of the card's token on another device of the account, still SUSPENDED, is told too.
    @Test func aSuspendedTokenOnAnotherDeviceOfTheAccountIsToldWhileItIsSuspended() async throws {
        let tsp = try TSPHarness.make()
        let first = try await LifecycleTests.activeToken(tsp)
        let tspOperator = LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1)
        _ = try await tspOperator.changeTokenState(LifecycleTests.change(first, .suspend, "FRAUD_SUSPECTED"))
        let other = CardV1.DeviceInfo(deviceID: "device-other", deviceType: "PHONE", deviceName: "Phone")
        _ = try await Self.addAgain(tsp, device: other)
        let held = try #require(try Self.lastHeld(tsp))
        #expect(held.digitalCardID == first && held.suspendedBy == "tsp" && !held.deleted && held.deletedAtMs == 0)

        // Another wallet account of the same wallet is another cardholder's: nothing is told there.
        let eligibility = try await tsp.checkEligibility(
            .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))), account: "account-2")
        _ = try await tsp.digitize(eligibility, account: "account-2")
        #expect(try Self.lastHeld(tsp) == nil)
    }

    /// Without the issuer, the stand-in may not approve a card whose suspension stands, whatever the risk.
    @Test func theStandInDeclinesACardWhoseSuspensionStands() async throws {
        let tsp = try TSPHarness.make()
        let first = try await LifecycleTests.activeToken(tsp)
        try await Self.suspendByIssuer(tsp, first, "LOST_CARD")
        try await Self.delete(tsp, first)
        tsp.issuer.set(.unavailable)
        let response = try await Self.addAgain(tsp)
        #expect(response.decision == .declined && response.decidedBy == "stand-in")
        #expect(
            response.declineReason
                == "the issuer did not answer and token \"\(first)\" of this card in this wallet account was "
                + "suspended by the issuer (LOST_CARD) when the wallet deleted it (stand-in declined)")
    }
}
