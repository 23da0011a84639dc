import TokenetNode
import TokenetRPC
import TokenetWire

extension WalletV1.WalletEvents.Client {
    /// The issuer app's tokens in the wallet, every page of `CurrentTokens` as one response (the wallet account and
    /// the selection of the last page), asked at the largest page size. `until` stops at the first page holding a token it accepts,
    /// so a lookup reads no further than it must.
    func allCurrentTokens(
        until found: (WalletV1.TokenStatus) -> Bool = { _ in false }
    ) async throws -> WalletV1.CurrentTokensResponse {
        var request = WalletV1.CurrentTokensRequest(pageSize: Int32(PageRequest.maximumSize))
        var all = WalletV1.CurrentTokensResponse()
        while true {
            let page = try await currentTokens(request)
            all.walletAccountID = page.walletAccountID
            all.selectedDigitalCardID = page.selectedDigitalCardID
            all.tokens += page.tokens
            guard !page.nextPageToken.isEmpty, !page.tokens.contains(where: found) else { return all }
            guard page.nextPageToken != request.pageToken else {
                throw RPCError(.internal, "the wallet answered a page token with the same token; the pull stops")
            }
            request.pageToken = page.nextPageToken
        }
    }
}
