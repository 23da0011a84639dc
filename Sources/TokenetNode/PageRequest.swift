import Foundation
import TokenetRPC
import TokenetWire

/// One page of a list call: how many items, and after which one.
///
/// List calls that can grow without bound (an issuer's cards, a TSP's tokens) answer in pages, so that a listing of
/// 200,000 items is a few hundred responses of a few hundred KiB each rather than one response over the frame size
/// limit. The request carries `page_size` (0 for the default, more than the maximum read as the maximum) and
/// `page_token`, the `next_page_token` of the previous response.
///
/// A token is the call that made it (its method's full path, `/tokenet.wallet.v1.WalletControl/ListCards`, inside a
/// served call) and the key of the last item of the previous page, base64url-encoded behind a version tag: clients
/// treat it as opaque, and a later format can tell its own tokens from these. A token is taken only by the call that
/// made it: one listing's keys read as another's place (row numbers, in most), and a token of the wallet's
/// CurrentTokens paged its ListCards, one of its ListTransactions the TSP's. Tokens are not signed: a token made by
/// hand for a call is taken. Keys are unique and never change, so an item added between two pages is listed once, in
/// its place, or not at all if it sorts before the page under way.
public struct PageRequest: Equatable, Sendable {
    public static let defaultSize = 500
    public static let maximumSize = 1000
    private static let tokenTag = "p2."

    /// The number of items to return.
    public let size: Int
    /// The key the page starts after; nil for the first page.
    public let after: String?
    /// The call the page is for, as its messages name it.
    public let call: String
    /// What the page's tokens carry to tell their call: the served method's full path, or `call` outside a served call.
    private let scope: String

    /// The page a request asks for; INVALID_ARGUMENT, naming the call, for a negative size or a token this format
    /// did not make.
    public init(size: Int32, token: String, call: String) throws(RPCError) {
        guard size >= 0 else {
            throw RPCError(.invalidArgument, "\(call): page_size must be 0 (for \(Self.defaultSize)) or more")
        }
        self.size = size == 0 ? Self.defaultSize : min(Int(size), Self.maximumSize)
        self.call = call
        scope = ServerContext.current?.method ?? call
        guard !token.isEmpty else {
            after = nil
            return
        }
        guard let (madeBy, key) = Self.callAndKey(fromToken: token) else {
            throw RPCError(
                .invalidArgument,
                "\(call): page_token is not a next_page_token this node returned; start again with an empty page_token")
        }
        guard madeBy == scope else {
            throw RPCError(
                .invalidArgument,
                "\(call): page_token is a next_page_token of another listing, not of \(call); start again with an "
                    + "empty page_token")
        }
        after = key
    }

    /// The `next_page_token` of a page of `call` (a method's full path inside a served call) whose last item has this
    /// key.
    public static func token(after key: String, call: String) -> String {
        let base64 = Data((call + "\u{1F}" + key).utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return tokenTag + String(base64.prefix { $0 != "=" })
    }

    /// The `next_page_token` of a page of this request's call whose last item has this key.
    public func token(after key: String) -> String { Self.token(after: key, call: scope) }

    /// The items of a page read with one more than `size` asked for: that extra item tells whether another page
    /// follows. Returns the page's items and the `next_page_token` ("" on the last page).
    public func split<Item>(_ items: [Item], key: (Item) -> String) -> (items: [Item], nextPageToken: String) {
        guard items.count > size else { return (items, "") }
        let page = Array(items.prefix(size))
        return (page, token(after: key(page[page.count - 1])))
    }

    private static func callAndKey(fromToken token: String) -> (call: String, key: String)? {
        guard token.hasPrefix(tokenTag) else { return nil }
        // Strictly: a token with a stray "=" or one character cut off is refused, not read as another key.
        guard let data = ProtoJSONBase64.decode(token.dropFirst(tokenTag.count)),
            let payload = String(data: data, encoding: .utf8), let separator = payload.firstIndex(of: "\u{1F}")
        else { return nil }
        let key = String(payload[payload.index(after: separator)...])
        guard !key.isEmpty else { return nil }
        return (String(payload[..<separator]), key)
    }
}
