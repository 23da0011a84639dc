import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.tsp.v1.TspControl`: the operator's view of tokens and their audit trail.
struct ControlService: TspV1.TspControl.ServiceProtocol {
    let tsp: TSPService

    func listTokens(_ request: TspV1.ListTokensRequest, context: ServerContext) async throws
        -> TspV1.ListTokensResponse
    {
        try await tsp.handling("ListTokens", context) { _ in
            let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "ListTokens")
            let rows = try tsp.store.tokens(
                walletAccountID: request.walletAccountID.isEmpty ? nil : request.walletAccountID, after: page.after,
                limit: page.size + 1)
            let (tokens, next) = page.split(rows, key: \.pageKey)
            return TspV1.ListTokensResponse(tokens: tokens.map(\.token.summary), nextPageToken: next)
        }
    }

    func tokenHistory(_ request: TspV1.TokenHistoryRequest, context: ServerContext) async throws
        -> TspV1.TokenHistoryResponse
    {
        try await tsp.handling("TokenHistory", context) { _ in
            guard !request.digitalCardID.isEmpty else {
                throw TSPError(.invalidArgument, "digital_card_id is required")
            }
            guard let token = try tsp.store.token(request.digitalCardID) else {
                throw TSPError(.notFound, "no token has digital card id \"\(request.digitalCardID)\"")
            }
            return TspV1.TokenHistoryResponse(
                token: token.summary, events: try tsp.store.events(of: token.digitalCardID))
        }
    }
}
