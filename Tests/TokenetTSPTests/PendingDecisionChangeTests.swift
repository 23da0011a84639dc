import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// Changes made to a token while its digitization waits for the issuer's decision: the decision that comes after
/// must not undo a delete, and nothing may activate a token nobody has decided on.
@Suite struct PendingDecisionChangeTests {
    /// A digitization whose issuer holds its decision, running; returns the call and its token's id once the
    /// issuer has been asked.
    static func asking(_ tsp: TSPHarness, _ decision: FakeIssuer.Decision) async throws
        -> (call: Task<TspV1.DigitizeResponse, any Error>, token: String)
    {
        tsp.issuer.set(.held(decision))
        let eligibility = try await tsp.eligibleVisa()
        let call = Task { try await tsp.digitize(eligibility, requestID: UUID().uuidString) }
        for _ in 0..<6_000 where tsp.issuer.state.withLock({ $0.authorizations }) == 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        let tokens = try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens
        return (call, try #require(tokens.first?.digitalCardID))
    }

    /// Deleted while the issuer decided, then approved: the token stays DEACTIVATED (the approval made it ACTIVE
    /// at the TSP alone, and payments on it were approved), and the wallet is told why it is declined.
    @Test func anApprovalAfterADeleteLeavesTheTokenDeleted() async throws {
        let tsp = try TSPHarness.make()
        let (call, id) = try await Self.asking(tsp, .approve)
        _ = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1).changeTokenState(
            LifecycleTests.change(id, .delete, "FRAUD_SUSPECTED"))
        tsp.issuer.release()
        let response = try await call.value
        #expect(response.decision == .declined)
        #expect(response.tokenState == .deactivated)
        #expect(
            response.declineReason
                == "the token was deleted by the TSP (FRAUD_SUSPECTED) before its digitization was decided; add "
                + "the card again")
        let token = try #require(try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens.first)
        #expect(token.state == .deactivated)
        // Left as the delete left it: the version the wallet heard with the delete's CARD_STATE.
        #expect(response.stateVersion == 2)
        let history = try await tsp.control.tokenHistory(.init(digitalCardID: id)).events
        #expect(history.map(\.toState) == [.inactive, .deactivated, .deactivated])
        #expect(history.last?.reason.hasSuffix("(the decision that came after it: approved)") == true, "\(history)")
        #expect(!history.contains { $0.toState == .active })
    }

    /// The call centre's activation of a token whose digitization waits for the issuer is refused: activated then,
    /// it took payments until the issuer's decline arrived.
    @Test func aTokenWaitingForItsDecisionCannotBeActivated() async throws {
        let tsp = try TSPHarness.make()
        let (call, id) = try await Self.asking(tsp, .decline("fraud review"))
        // The listing tells it from a token waiting for ID&V, which the call centre may activate.
        let listed = try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens
        #expect(listed.map(\.awaitingDecision) == [true] && listed.first?.state == .inactive)
        let refusal = await #expect(throws: RPCError.self) {
            try await tsp.issuerIdv.activateToken(TspV1.ActivateTokenRequest(digitalCardID: id))
        }
        #expect(refusal?.code == .failedPrecondition)
        #expect(refusal?.message.contains("is waiting for the issuer's decision on its digitization") == true)
        tsp.issuer.release()
        let response = try await call.value
        #expect(response.decision == .declined && response.declineReason == "fraud review")
        #expect(try await tsp.control.listTokens(TspV1.ListTokensRequest()).tokens.map(\.awaitingDecision) == [false])
        let history = try await tsp.control.tokenHistory(.init(digitalCardID: id)).events
        #expect(history.map(\.toState) == [.inactive, .deactivated])
    }
}
