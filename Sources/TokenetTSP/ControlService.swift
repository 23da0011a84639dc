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
            let filter = try TokenListingFilter(request)
            let after = try page.afterTimeKey(in: filter.listingName, call: "ListTokens") { ofEveryToken in
                (ofEveryToken ? "continues a listing of every token" : "continues a listing with other filters")
                    + "; ask again with the wallet_account_id, issuer_id, wallet_node_id and state of that listing"
            }
            let rows = try tsp.store.tokens(
                filter, after: after.map { ($0.ms, String($0.tieBreaker)) }, limit: page.size + 1)
            let (tokens, next) = page.split(rows, key: \.pageKey)
            let deciding = try tsp.store.awaitingDecision(
                among: tokens.filter { $0.token.state == .inactive }.map(\.token.digitalCardID))
            return TspV1.ListTokensResponse(
                tokens: tokens.map {
                    var summary = $0.token.summary
                    summary.awaitingDecision = deciding.contains($0.token.digitalCardID)
                    return summary
                }, nextPageToken: next)
        }
    }

    func tokenHistory(_ request: TspV1.TokenHistoryRequest, context: ServerContext) async throws
        -> TspV1.TokenHistoryResponse
    {
        try await tsp.handling("TokenHistory", context) { _ in
            guard !request.digitalCardID.isEmpty else {
                throw TSPError(.invalidArgument, "digital_card_id is required")
            }
            let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "TokenHistory")
            // A key names the token whose history it continues (its time is there for the format's sake: the row
            // alone places the page, events being listed in the order recorded).
            let after = try page.afterTime(
                in: request.digitalCardID, call: "TokenHistory", field: "digital_card_id", items: "token")
            guard let token = try tsp.store.token(request.digitalCardID) else {
                throw TSPError.unknownToken(request.digitalCardID)
            }
            let events = try tsp.store.eventPage(
                of: token.digitalCardID, afterRow: after.row, limit: page.size + 1)
            let (listed, next) = page.split(events) {
                PageRequest.key(in: token.digitalCardID, ms: Int64($0.event.atMs), row: $0.row)
            }
            return TspV1.TokenHistoryResponse(
                token: token.summary, events: listed.map(\.event), nextPageToken: next)
        }
    }
}
