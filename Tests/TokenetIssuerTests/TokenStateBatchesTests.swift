import Testing
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// How the answers of a token change sent in batches, and the issuer's own refusals, make one answer.
@Suite struct TokenStateBatchesTests {
    static func result(_ id: String, _ state: CardV1.TokenState, _ status: StatusCode = .ok)
        -> TspV1.TokenStateResult
    {
        TspV1.TokenStateResult(digitalCardID: id, tokenState: state, statusCode: status.rawValue, message: "m")
    }

    /// A token named that the issuer knows is gone is refused by the issuer, by name and with the status the TSP
    /// would give; the answer keeps the order named. Only what the TSP answered says which tokens to record: not
    /// the issuer's own refusals, nor the tokens of a call that failed (whose status is the call's).
    @Test func theIssuersOwnRefusalsTakeTheirPlaceAndRecordNothing() throws {
        var batches = TokenStateBatches()
        batches.refusedByIssuer(TokenStateBatches.refusal(of: "B", .deleted(sinceMs: 1_800_000_000_000)))
        batches.refusedByIssuer(TokenStateBatches.refusal(of: "D", .unknownToTSP(sinceMs: 0)))
        batches.answered(.init(results: [Self.result("A", .suspended), Self.result("C", .unspecified, .notFound)]))
        batches.answered(.init(results: [Self.result("E", .deactivated, .failedPrecondition)]))
        batches.failed(["F"], RPCError(.notFound, "no such method"))
        let answer = try batches.answer(in: ["A", "B", "C", "D", "E", "F"])
        #expect(answer.results.map(\.digitalCardID) == ["A", "B", "C", "D", "E", "F"])
        let deleted = answer.results[1]
        #expect(deleted.tokenState == .deactivated && deleted.statusCode == StatusCode.failedPrecondition.rawValue)
        #expect(deleted.message.contains("token \"B\" is deleted (the issuer learned it at 2027-01-15T08:00:00Z)"))
        let unknown = answer.results[3]
        #expect(unknown.tokenState == .unspecified && unknown.statusCode == StatusCode.notFound.rawValue)
        #expect(unknown.message.contains("the TSP does not know token \"D\""))
        #expect(batches.deleted == ["E"])
        #expect(batches.unknown == ["C"])
        #expect(batches.known == ["A", "E"])
    }

    /// A token id that reads as a card number (one pasted by mistake) is echoed masked in its result, as its
    /// message is.
    @Test func anIdThatReadsAsACardNumberIsEchoedMasked() throws {
        var batches = TokenStateBatches()
        batches.answered(.init(results: [Self.result("4111111111111111", .unspecified, .notFound)]))
        let answer = try batches.answer(in: ["4111111111111111"])
        #expect(answer.results.map(\.digitalCardID) == ["************1111"])
    }

    /// Deleting a token the issuer knows is deleted is no refusal: deleting is idempotent, as at the TSP, so the
    /// result is OK and DEACTIVATED, still without a TSP call; suspending or resuming it is refused.
    @Test func deletingATokenKnownDeletedIsAnsweredOK() {
        let deleted = TokenStateBatches.refusal(of: "B", .deleted(sinceMs: 1_800_000_000_000), deleting: true)
        #expect(deleted.tokenState == .deactivated && deleted.statusCode == StatusCode.ok.rawValue)
        #expect(deleted.message.hasPrefix("token \"B\" was deleted already (the issuer learned it at 2027-01-15"))
        let unknown = TokenStateBatches.refusal(of: "D", .unknownToTSP(sinceMs: 0), deleting: true)
        #expect(unknown.statusCode == StatusCode.notFound.rawValue)
    }

    /// The tokens the TSP answered about show it knows them; NOT_FOUND and PERMISSION_DENIED (another issuer's
    /// token, nothing of it told) do not, nor does a failed call or the issuer's own refusal.
    @Test func theTokensTheTSPAnsweredAboutAreKnown() {
        var batches = TokenStateBatches()
        batches.refusedByIssuer(TokenStateBatches.refusal(of: "R", .unknownToTSP(sinceMs: 0)))
        batches.answered(
            .init(results: [
                Self.result("A", .suspended), Self.result("N", .unspecified, .notFound),
                Self.result("P", .unspecified, .permissionDenied), Self.result("S", .suspended, .failedPrecondition),
            ]))
        batches.failed(["F"], RPCError(.unavailable, "down"))
        #expect(batches.known == ["A", "S"])
    }

    /// Every token named gone: no TSP call, and the issuer's refusals are the answer.
    /// With no call answered, the change fails with the first call's code, saying the TSP's call failed and the
    /// tokens' states are unknown.
    @Test func noCallAnsweredIsTheTSPsFailure() {
        var batches = TokenStateBatches()
        batches.failed(["A"], RPCError(.unavailable, "connection lost: read failed"))
        let error = #expect(throws: RPCError.self) { try batches.answer(in: ["A"]) }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message
                == "the TSP's ChangeIssuerTokenStates failed, so the tokens' states are unknown (tokenet tsp tokens, "
                + "or the TSP's token history, shows them): connection lost: read failed")
    }

    /// No call left the issuer (the TSP could not be connected to): nothing changed at the TSP, and the answer says
    /// so rather than that the tokens' states are unknown, which sent the operator to check each one.
    @Test func noCallSentChangedNothing() {
        var batches = TokenStateBatches()
        let notConnected = RPCError(
            .unavailable, "cannot connect to the tsp-node at 127.0.0.1:1 (--tsp)",
            cause: NotConnected(reason: "refused"))
        batches.failed(["A"], notConnected)
        let error = #expect(throws: RPCError.self) { try batches.answer(in: ["A"]) }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message
                == "the TSP could not be reached, so no token was changed: cannot connect to the tsp-node at "
                + "127.0.0.1:1 (--tsp); try again once the TSP can be reached")
        // A refusal of the whole call by the TSP (this node not registered) changed nothing either.
        var refused = TokenStateBatches()
        refused.failed(["A"], RPCError(.failedPrecondition, "this node has not registered an issuer"))
        let refusal = #expect(throws: RPCError.self) { try refused.answer(in: ["A"]) }
        #expect(
            refusal?.message
                == "the TSP refused ChangeIssuerTokenStates, so no token was changed: this node has not registered an "
                + "issuer")
        // One call that may have reached the TSP makes the outcome unknown again.
        batches.failed(["B"], RPCError(.unavailable, "connection lost: read failed"))
        let mixed = #expect(throws: RPCError.self) { try batches.answer(in: ["A", "B"]) }
        #expect(mixed?.message.contains("the tokens' states are unknown") == true)
    }

    @Test func tokensAllKnownGoneAreAnsweredWithoutTheTSP() throws {
        var batches = TokenStateBatches()
        batches.refusedByIssuer(TokenStateBatches.refusal(of: "A", .deleted(sinceMs: 0)))
        #expect(try batches.answer(in: ["A"]).results.map(\.digitalCardID) == ["A"])
    }
}
