import TokenetNode
import TokenetRPC
import TokenetWire

/// A request of a paged list call (`Protos/README.md`, "Conventions").
protocol PagedListRequest: Sendable {
    var pageSize: Int32 { get set }
    var pageToken: String { get set }
}

/// A response of a paged list call: one page of items, and the token of the next page.
protocol PagedListResponse: Sendable {
    associatedtype Item
    init()
    var items: [Item] { get set }
    var nextPageToken: String { get }
}

extension IssuerV1.ListCardsRequest: PagedListRequest {}
extension TspV1.ListTokensRequest: PagedListRequest {}
extension TspV1.ListTransactionsRequest: PagedListRequest {}
extension WalletV1.ListWalletCardsRequest: PagedListRequest {}
extension WalletV1.WalletTransactionsRequest: PagedListRequest {}
extension WalletV1.WalletInboxRequest: PagedListRequest {}

extension IssuerV1.ListCardsResponse: PagedListResponse {
    var items: [IssuerV1.IssuerCard] {
        get { cards }
        set { cards = newValue }
    }
}

extension TspV1.ListTokensResponse: PagedListResponse {
    var items: [TspV1.TokenSummary] {
        get { tokens }
        set { tokens = newValue }
    }
}

extension TspV1.ListTransactionsResponse: PagedListResponse {
    var items: [TspV1.TspTransaction] {
        get { transactions }
        set { transactions = newValue }
    }
}

extension WalletV1.ListWalletCardsResponse: PagedListResponse {
    var items: [WalletV1.WalletCard] {
        get { cards }
        set { cards = newValue }
    }
}

extension WalletV1.WalletTransactionsResponse: PagedListResponse {
    var items: [WalletV1.WalletTransaction] {
        get { transactions }
        set { transactions = newValue }
    }
}

extension WalletV1.WalletInboxResponse: PagedListResponse {
    var items: [TspV1.Notification] {
        get { notifications }
        set { notifications = newValue }
    }
}

enum PagedListing {
    /// Every page of a list call as one response, so that a table lines up across pages and `--json` prints one
    /// listing. Pages are asked at the largest size a node serves (fewest round trips); `options` gives each page's
    /// call options (what is left of a command's deadline). `peer` names the node in the error for a token that
    /// does not move on, which would otherwise loop for ever.
    static func all<Request: PagedListRequest, Response: PagedListResponse>(
        _ request: Request, from peer: String, options: () -> CallOptions,
        page: (Request, CallOptions) async throws -> Response
    ) async throws -> Response {
        var request = request
        request.pageSize = Int32(PageRequest.maximumSize)
        var listing = Response()
        while true {
            let response = try await page(request, options())
            listing.items.append(contentsOf: response.items)
            guard !response.nextPageToken.isEmpty else { return listing }
            guard response.nextPageToken != request.pageToken else {
                throw RPCError(.internal, "\(peer) answered a page token with the same token; the listing stops")
            }
            request.pageToken = response.nextPageToken
        }
    }

    /// The options for each page of a command's listing: the command's first call options (its trace id), then the
    /// same with what is left of its deadline.
    static func options(_ session: InspectSession, first: CallOptions) -> () -> CallOptions {
        var next = first
        return {
            defer { next.timeout = session.callOptions.timeout }
            return next
        }
    }
}
