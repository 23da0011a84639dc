import TokenetRPC

extension TSPService {
    /// The issuer the calling node registered (RegisterIssuer), which owns the enrolments it names.
    func callingIssuer(_ context: ServerContext) throws -> String {
        let nodeID = context.peer?.nodeID
        guard let nodeID, let issuer = try store.issuers().first(where: { $0.peerNodeID == nodeID }) else {
            // Not who the caller is but what it has not done yet: a precondition, as gRPC names it.
            throw TSPError(
                .failedPrecondition,
                "node \"\(nodeID ?? "unknown")\" has not registered an issuer with this token service; call "
                    + "RegisterIssuer first")
        }
        return issuer.id
    }
}
