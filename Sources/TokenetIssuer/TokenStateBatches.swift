import TokenetRPC
import TokenetWire

/// The answer to a change of token states sent to the TSP in batches (`LifecycleLimits.batches`), combined from each
/// call's outcome. Pure: the driver (`IssuerCardCareService.changeTokenStates`) makes the calls.
///
/// Each call changes its own tokens, one at a time, so a call that fails tells nothing about another's: every batch
/// is sent, and a failed call's tokens each get its status (their state unknown) beside the others' results. Only
/// when no call was answered is the whole change a failure, the first call's, as for a single call. The tokens the
/// driver left out as known deleted are counted in the answer (`skippedDeleted`), and the tokens the TSP's results
/// show deleted (`deleted`) are the ones it records as such.
struct TokenStateBatches {
    private(set) var results: [TspV1.TokenStateResult] = []
    private var answered = 0
    private var firstFailure: RPCError?
    /// How many tokens were not sent because the issuer knows them deleted.
    let skippedDeleted: Int

    init(skippedDeleted: Int = 0) { self.skippedDeleted = skippedDeleted }

    /// The tokens the TSP's results show deleted: deleted by this change, or refused as deleted already.
    var deleted: [String] { results.filter { $0.tokenState == .deactivated }.map(\.digitalCardID) }

    /// The TSP answered a batch.
    mutating func answered(_ response: TspV1.ChangeIssuerTokenStatesResponse) {
        answered += 1
        results += response.results
    }

    /// The call for `batch` failed with `error`.
    mutating func failed(_ batch: [String], _ error: RPCError) {
        if firstFailure == nil { firstFailure = error }
        results += batch.map {
            TspV1.TokenStateResult(
                digitalCardID: $0, tokenState: .unspecified, statusCode: error.code.rawValue,
                message: "the TSP call for this token failed, so its state is unknown: \(error.message)")
        }
    }

    /// Every token's result, or the first call's failure when no call was answered.
    func answer() throws(RPCError) -> IssuerV1.IssuerChangeTokenStatesResponse {
        if answered == 0, let firstFailure { throw firstFailure }
        return IssuerV1.IssuerChangeTokenStatesResponse(results: results, deletedTokensSkipped: Int32(skippedDeleted))
    }
}
