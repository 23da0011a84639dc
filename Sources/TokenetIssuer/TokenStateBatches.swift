import Foundation
import TokenetNode
import TokenetRPC
import TokenetWire

/// The answer to a change of token states sent to the TSP in batches (`LifecycleLimits.batches`), combined from each
/// call's outcome. Pure: the driver (`IssuerCardCareService.changeTokenStates`) makes the calls.
///
/// Each call changes its own tokens, one at a time, so a call that fails tells nothing about another's: every batch
/// is sent, and a failed call's tokens each get its status (their state unknown) beside the others' results. Only
/// when no call was answered is the whole change a failure, the first call's, as for a single call. The tokens of a
/// card the driver left out as known deleted or unknown to the TSP are counted in the answer (`skippedDeleted`,
/// `skippedUnknown`); a token named one by one that the issuer knows is gone is refused in its own result without a
/// TSP call (`refusedByIssuer`). The tokens the TSP's results show deleted (`deleted`) or answer NOT_FOUND
/// (`unknown`) are the ones the driver records as such (an unknown one only if the TSP once named it to the issuer;
/// the others' answers say neither knows it, `neverHeardOf`), and those it answers about (`known`) the ones it no
/// longer records as unknown.
struct TokenStateBatches {
    private(set) var results: [TspV1.TokenStateResult] = []
    private var answered = 0
    private var firstFailure: RPCError?
    /// Whether a failed call may have changed tokens at the TSP: one that never left this node, or that the TSP
    /// refused as a whole (`refusedWhole`), changed nothing there.
    private var failureMayHaveChangedTokens = false

    /// The statuses the TSP refuses a whole call with before it changes anything (this node not registered, a
    /// request it does not take); a token it cannot change is a result of its own in an answered call.
    static let refusedWhole: Set<StatusCode> = [
        .failedPrecondition, .permissionDenied, .invalidArgument, .unauthenticated, .notFound, .unimplemented,
    ]
    /// The ids of the results the TSP answered (not a failed call's, not the issuer's own refusals).
    private var answeredIDs: Set<String> = []
    /// How many tokens were not sent because the issuer knows them deleted, or unknown to the TSP.
    let skippedDeleted: Int
    let skippedUnknown: Int

    init(skippedDeleted: Int = 0, skippedUnknown: Int = 0) {
        self.skippedDeleted = skippedDeleted
        self.skippedUnknown = skippedUnknown
    }

    /// The tokens the TSP's results show deleted: deleted by this change, or refused as deleted already.
    var deleted: [String] {
        results.filter { $0.tokenState == .deactivated && answeredIDs.contains($0.digitalCardID) }
            .map(\.digitalCardID)
    }

    /// The tokens the TSP answered it does not know (NOT_FOUND in their own results).
    var unknown: [String] {
        results.filter { $0.statusCode == StatusCode.notFound.rawValue && answeredIDs.contains($0.digitalCardID) }
            .map(\.digitalCardID)
    }

    /// The tokens the TSP answered about in their own results, showing it knows them: any result but NOT_FOUND, and
    /// but PERMISSION_DENIED (another issuer's token, of which the TSP tells nothing).
    var known: [String] {
        let silent: Set<Int32> = [StatusCode.notFound.rawValue, StatusCode.permissionDenied.rawValue]
        return results.filter { !silent.contains($0.statusCode) && answeredIDs.contains($0.digitalCardID) }
            .map(\.digitalCardID)
    }

    /// The issuer's own refusal of token `id`, named one by one, which it knows is `gone`: the TSP would refuse it
    /// the same way every time (a deleted token takes no change; one the TSP does not know has nothing to change),
    /// so it is not sent, and the result says why and since when. A delete of a token known deleted is no refusal:
    /// deleting is idempotent, as at the TSP, so it is answered OK (DEACTIVATED), still without a TSP call.
    static func refusal(of id: String, _ gone: IssuerStore.GoneToken, deleting: Bool = false)
        -> TspV1.TokenStateResult
    {
        switch gone {
        case .deleted(let sinceMs) where deleting:
            return TspV1.TokenStateResult(
                digitalCardID: id, tokenState: .deactivated, statusCode: StatusCode.ok.rawValue,
                message: "token \"\(id)\" was deleted already (the issuer learned it at \(Self.time(sinceMs))), so it "
                    + "was not sent to the TSP")
        case .deleted(let sinceMs):
            return TspV1.TokenStateResult(
                digitalCardID: id, tokenState: .deactivated, statusCode: StatusCode.failedPrecondition.rawValue,
                message: "token \"\(id)\" is deleted (the issuer learned it at \(Self.time(sinceMs))), and a deleted "
                    + "token takes no change, so it was not sent to the TSP")
        case .unknownToTSP(let sinceMs):
            return TspV1.TokenStateResult(
                digitalCardID: id, tokenState: .unspecified, statusCode: StatusCode.notFound.rawValue,
                message: "the TSP does not know token \"\(id)\" (it answered so at \(Self.time(sinceMs))), so it was "
                    + "not sent again; check the id with tokenet tsp tokens, or send it anyway with "
                    + "--recheck-unknown (recheck_unknown) once the TSP knows it")
        }
    }

    private static func time(_ ms: UInt64) -> String {
        Date(timeIntervalSince1970: Double(ms) / 1000).formatted(.iso8601)
    }

    /// The issuer refused a token itself (`refusal(of:_:)`), without a TSP call.
    mutating func refusedByIssuer(_ result: TspV1.TokenStateResult) {
        results.append(result)
    }

    /// The TSP answered a batch.
    mutating func answered(_ response: TspV1.ChangeIssuerTokenStatesResponse) {
        answered += 1
        results += response.results
        answeredIDs.formUnion(response.results.map(\.digitalCardID))
    }

    /// The TSP answered NOT_FOUND for `ids` and the issuer never heard of them either (`noteUnknown`): most likely
    /// a mistyped id, which the answer names and says how to check, rather than the TSP's bare refusal.
    mutating func neverHeardOf(_ ids: Set<String>) {
        guard !ids.isEmpty else { return }
        for index in results.indices
        where ids.contains(results[index].digitalCardID)
            && results[index].statusCode == StatusCode.notFound.rawValue
        {
            let id = results[index].digitalCardID
            results[index].message =
                "no token has digital card id \"\(maskPAN(id))\": neither the TSP nor the issuer knows it; check the id "
                + "(tokenet tsp tokens lists the TSP's tokens)"
        }
    }

    /// The call for `batch` failed with `error`.
    mutating func failed(_ batch: [String], _ error: RPCError) {
        if firstFailure == nil { firstFailure = error }
        let refused = Self.refusedWhole.contains(error.code)
        if !error.callWasNeverSent && !refused { failureMayHaveChangedTokens = true }
        let what =
            error.callWasNeverSent
            ? "the TSP could not be reached for this token, which keeps its state"
            : refused
                ? "the TSP refused the call for this token, which keeps its state"
                : "the TSP call for this token failed, so its state is unknown"
        results += batch.map {
            TspV1.TokenStateResult(
                digitalCardID: $0, tokenState: .unspecified, statusCode: error.code.rawValue,
                message: "\(what): \(error.message)")
        }
    }

    /// Every token's result in the order of `ids` (the tokens asked about, each once), or the first call's failure
    /// when no call was answered, with its code, saying it was the TSP's and that the tokens' states are unknown: the
    /// bare "connection lost" of the issuer's link to the TSP read as the CLI's own connection to the issuer.
    func answer(in ids: [String]) throws(RPCError) -> IssuerV1.IssuerChangeTokenStatesResponse {
        if answered == 0, let firstFailure, !failureMayHaveChangedTokens {
            // No call left this node, or the TSP refused each before changing anything: nothing changed at the TSP,
            // which "unknown" sent the operator to check.
            guard firstFailure.callWasNeverSent else {
                throw RPCError(
                    firstFailure.code,
                    "the TSP refused ChangeIssuerTokenStates, so no token was changed: \(firstFailure.message)",
                    cause: firstFailure)
            }
            throw RPCError(
                firstFailure.code,
                "the TSP could not be reached, so no token was changed: \(firstFailure.message); try again once the "
                    + "TSP can be reached", cause: firstFailure)
        }
        if answered == 0, let firstFailure {
            throw RPCError(
                firstFailure.code,
                "the TSP's ChangeIssuerTokenStates failed, so the tokens' states are unknown (tokenet tsp tokens, or "
                    + "the TSP's token history, shows them): \(firstFailure.message)", cause: firstFailure)
        }
        let place = Dictionary(ids.enumerated().map { ($1, $0) }) { first, _ in first }
        let key = { (entry: (offset: Int, element: TspV1.TokenStateResult)) in
            (place[entry.element.digitalCardID] ?? Int.max, entry.offset)
        }
        // An id that reads as a card number (one pasted by mistake) is echoed masked, as its result's message is.
        let ordered = results.enumerated().sorted { key($0) < key($1) }.map { entry in
            var result = entry.element
            result.digitalCardID = maskPAN(result.digitalCardID)
            return result
        }
        return IssuerV1.IssuerChangeTokenStatesResponse(
            results: ordered, deletedTokensSkipped: Int32(skippedDeleted), unknownTokensSkipped: Int32(skippedUnknown))
    }
}
