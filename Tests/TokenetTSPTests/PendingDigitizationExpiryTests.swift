import Foundation
import Testing
import TokenetCard
import TokenetWire

@testable import TokenetTSP

/// A digitization the TSP left pending (it stopped while asking the issuer) and the wallet never retried ends once
/// the step-up window is over, instead of lingering INACTIVE, without ID&V methods, for good.
@Suite struct PendingDigitizationExpiryTests {
    /// Step one of Digitize alone, as if the TSP died while asking the issuer: the token of `requestID`.
    static func leavePending(_ tsp: TSPHarness, _ eligibility: TspV1.CheckEligibilityResponse, requestID: String)
        throws -> String
    {
        let vault = try TSPKeyFiles.loadVault(dataDirectory: tsp.directory)
        let store = try TSPStore.open(path: tsp.directory + "/tsp.sqlite", key: vault)
        defer { try? store.database.close() }
        var request = TspV1.DigitizeRequest(
            requestID: requestID, eligibilityReceipt: eligibility.eligibilityReceipt, device: TSPHarness.device,
            walletAccountID: TSPHarness.account)
        if case .termsAndConditions(let terms) = eligibility.terms {
            request.acceptedTermsID = terms.id
            request.termsAcceptedAtMs = 1
        }
        let start = try store.beginDigitization(
            request, nowMs: tsp.clock.now.unixMilliseconds, traceID: "t", walletNodeID: "wallet-1"
        ) { pan, _ in
            NewToken(
                digitalCardID: DigitalCardID.generate(for: .visa)!,
                tokenPAN: try TokenPANGenerator.sandbox().generate(for: pan),
                expiry: try CardExpiry(month: 1, year: 2030))
        }
        guard case .pending(let pending) = start else { throw TSPError(.internal, "expected a pending digitization") }
        return pending.token.digitalCardID
    }

    /// Within the window the pending token waits (a retry resumes it); once the window is over, the next
    /// digitization ends it: DEACTIVATED with the reason in its history, its parties told, a retry with its request
    /// id answered DECLINED (add the card again) without asking the issuer, and the card added again goes live.
    @Test func aPendingDigitizationNobodyRetriesEndsWhenTheWindowIsOver() async throws {
        var configuration = TSPHarness.configuration
        configuration.stepUpValidity = .seconds(3600)
        let tsp = try TSPHarness.make(configuration: configuration)
        let eligibility = try await tsp.eligibleVisa()
        let pending = try Self.leavePending(tsp, eligibility, requestID: "req-left")
        tsp.clock.advance(seconds: 3599)
        _ = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        #expect(try await SameCardTests.state(tsp, pending) == .inactive)
        tsp.clock.advance(seconds: 1)
        tsp.issuer.set(.approve)
        let again = try await tsp.digitize(try await tsp.eligibleVisa())
        #expect(again.tokenState == .active)
        #expect(try await SameCardTests.state(tsp, pending) == .deactivated)
        let last = try #require(try await SameCardTests.history(tsp, pending).events.last)
        #expect(last.actor == "tsp" && last.reason.contains("digitization expired"), "\(last)")
        #expect(last.reason.contains("within 3600 s"), "\(last)")
        #expect(SameCardTests.cardStates(tsp, pending) == ["deactivated DIGITIZATION_EXPIRED tsp"])
        let asked = tsp.issuer.state.withLock { $0.authorizations }
        let retry = try await tsp.digitize(eligibility, requestID: "req-left")
        #expect(retry.decision == .declined && retry.tokenState == .deactivated, "\(retry)")
        #expect(retry.declineReason.contains("add the card again"), "\(retry)")
        #expect(tsp.issuer.state.withLock { $0.authorizations } == asked)
    }

    /// An issuer deadline set longer than the window: a digitization made within it may still be asking the issuer,
    /// so it is not ended until the deadline has passed too.
    @Test func aDigitizationStillWithinTheIssuerDeadlineIsNotEnded() async throws {
        var configuration = TSPHarness.configuration
        configuration.stepUpValidity = .seconds(3600)
        configuration.issuerDeadline = .seconds(7200)
        let tsp = try TSPHarness.make(configuration: configuration)
        let pending = try Self.leavePending(tsp, try await tsp.eligibleVisa(), requestID: "req-asking")
        tsp.clock.advance(seconds: 7199)
        _ = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        #expect(try await SameCardTests.state(tsp, pending) == .inactive)
        tsp.clock.advance(seconds: 1)
        let tablet = CardV1.DeviceInfo(deviceID: "device-2", deviceType: "PHONE", deviceName: "Tablet")
        let eligibility = try await tsp.checkEligibility(
            .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.mastercard))), device: tablet)
        _ = try await tsp.digitize(eligibility, device: tablet)
        #expect(try await SameCardTests.state(tsp, pending) == .deactivated)
    }
}
