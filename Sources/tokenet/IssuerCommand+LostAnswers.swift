import TokenetRPC

/// Operator commands whose call to issuer-node failed in a way that leaves open whether the issuer did what was
/// asked: which failures those are, and the hint each command adds to them.
extension IssuerCommand {
    /// Whether a failed call may have been carried out by the node all the same: its deadline passed, or the
    /// connection was lost after the call was sent.
    static func answerMayBeLost(_ error: RPCError) -> Bool {
        // A call that never left this side (its deadline passed before it was sent) reached no one.
        guard !error.callWasNeverSent else { return false }
        return switch error.code {
        case .deadlineExceeded: !error.message.hasPrefix("the deadline passed while connecting")
        case .unavailable: !error.callWasNotProcessed && error.message.hasPrefix("connection lost")
        default: false
        }
    }

    /// Whether a failed change of token states may have been passed on to the TSP by the issuer: this command's own
    /// call was lost after it was sent (`answerMayBeLost`). The issuer's own answers about its calls to the TSP
    /// ("the TSP could not be reached, so no token was changed", "the TSP's ChangeIssuerTokenStates failed, so the
    /// tokens' states are unknown") say already what happened there, and a call that never left changed nothing.
    static func changeMayHaveReachedTSP(_ error: RPCError) -> Bool {
        answerMayBeLost(error) && !error.message.hasPrefix("the TSP")
    }

    /// Runs an operator's call, adding `hint` to its failure when the issuer may have done it all the same (its
    /// answer was lost, or did not come in time: `answerMayBeLost`): the bare DEADLINE_EXCEEDED read as nothing
    /// done, where the TSP had activated the token or made the push receipt. The issuer's own account of its call
    /// to the TSP ("the TSP …") gets no guess: it says what happened there.
    static func hintingLostAnswer<T>(_ hint: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RPCError where changeMayHaveReachedTSP(error) {
            throw RPCError(error.code, "\(error.message); \(hint)", cause: error)
        }
    }
}
