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
    init()
    var nextPageToken: String { get }
    /// Adds the items of a page to this listing (a response may list items of several kinds).
    mutating func append(page: Self)
}

/// A response of a paged list call whose items are of one kind, in the field `items` names.
protocol PagedItemsResponse: PagedListResponse {
    associatedtype Item
    static var items: WritableKeyPath<Self, [Item]> { get }
}

extension PagedItemsResponse {
    mutating func append(page: Self) { self[keyPath: Self.items].append(contentsOf: page[keyPath: Self.items]) }
}

extension IssuerV1.ListCardsRequest: PagedListRequest {}
extension TspV1.ListTokensRequest: PagedListRequest {}
extension TspV1.ListTransactionsRequest: PagedListRequest {}
extension WalletV1.ListWalletCardsRequest: PagedListRequest {}
extension WalletV1.WalletTransactionsRequest: PagedListRequest {}
extension WalletV1.WalletInboxRequest: PagedListRequest {}
extension IssuerV1.AppNotificationsRequest: PagedListRequest {}
extension TspV1.TokenHistoryRequest: PagedListRequest {}

extension IssuerV1.ListCardsResponse: PagedItemsResponse {
    static var items: WritableKeyPath<Self, [IssuerV1.IssuerCard]> { \.cards }
}

extension TspV1.ListTokensResponse: PagedItemsResponse {
    static var items: WritableKeyPath<Self, [TspV1.TokenSummary]> { \.tokens }
}

extension TspV1.ListTransactionsResponse: PagedItemsResponse {
    static var items: WritableKeyPath<Self, [TspV1.TspTransaction]> { \.transactions }
}

extension WalletV1.ListWalletCardsResponse: PagedItemsResponse {
    static var items: WritableKeyPath<Self, [WalletV1.WalletCard]> { \.cards }
}

extension WalletV1.WalletTransactionsResponse: PagedItemsResponse {
    static var items: WritableKeyPath<Self, [WalletV1.WalletTransaction]> { \.transactions }
}

extension WalletV1.WalletInboxResponse: PagedItemsResponse {
    static var items: WritableKeyPath<Self, [TspV1.Notification]> { \.notifications }
}

/// The issuer app's notifications, authentication requests and card ids: one listing of three kinds in turn.
extension IssuerV1.AppNotificationsResponse: PagedListResponse {
    mutating func append(page: Self) {
        notifications += page.notifications
        authnRequests += page.authnRequests
        cardIds += page.cardIds
    }
}

/// A token's history: its events in pages, each page with the token as it is now (the last page's is kept).
extension TspV1.TokenHistoryResponse: PagedListResponse {
    mutating func append(page: Self) {
        token = page.token
        events += page.events
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
            listing.append(page: response)
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
