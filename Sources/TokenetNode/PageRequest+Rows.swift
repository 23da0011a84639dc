import TokenetRPC

/// Page keys of listings read in the order of SQLite rows: by row id alone (rows in the order they were added), or
/// by a time and then the row id, within a listing a request narrows (one card's transactions, or every card's).
///
/// A row id is unique and does not change while its row is kept (Tokenet never vacuums its databases), and a row
/// added later gets a larger one than every row kept, so it is the cheapest key: the table itself, or an index on
/// the time (which holds the row id), is the order, and an item added between two pages sorts after the page under
/// way. Items of one millisecond are read past one by one from the first of them, which costs little as long as
/// few share a millisecond.
extension PageRequest {
    /// The row id a page of a listing in row order starts after: 0 for the first page. A key that is not a row id
    /// (a token another listing made) is INVALID_ARGUMENT.
    public func afterRow(call: String) throws(RPCError) -> Int64 {
        guard let after else { return 0 }
        // Written as `key(row:)` writes it: "01" or "+1" is no key this node made.
        guard let row = Int64(after), row > 0, String(row) == after else { throw Self.misplaced(call) }
        return row
    }

    /// The key of a row in a listing in row order.
    public static func key(row: Int64) -> String { "\(row)" }

    /// The time and row id a page of a listing ordered by time then row starts after (`Int64.min` and 0 for the
    /// first page): `afterTime(in:call:field:items:)` with a row id for the tie-breaker.
    public func afterTime(
        in listing: String, call: String, field: String, items: String
    ) throws(RPCError) -> (ms: Int64, row: Int64) {
        guard let (ms, tail) = try afterTimeKey(in: listing, call: call, field: field, items: items) else {
            return (Int64.min, 0)
        }
        guard let row = Int64(tail), row > 0 else { throw Self.misplaced(call) }
        return (ms, row)
    }

    /// The time and tie-breaker (a row id, or an id of the listing's own) a page of a listing ordered by time then
    /// that tie-breaker starts after; nil for the first page. The key names the listing it came from (`listing`, ""
    /// for the whole list): a token asked with another `field` than its listing's is INVALID_ARGUMENT, because going
    /// on from its place in the other listing would skip or repeat items instead of continuing it.
    ///
    /// - Parameters:
    ///   - listing: what the request narrows the list to (such as a card), "" for all of it.
    ///   - field: the request field that names `listing`, for the message.
    ///   - items: what the whole list holds ("card", so "every card"), for the message.
    public func afterTimeKey(
        in listing: String, call: String, field: String, items: String
    ) throws(RPCError) -> (ms: Int64, tieBreaker: Substring)? {
        try afterTimeKey(in: listing, call: call) { ofTheWholeList in
            "continues a listing of " + (ofTheWholeList ? "every \(items)" : "another \(items)")
                + "; ask again with the \(field) of that listing"
        }
    }

    /// `afterTimeKey(in:call:field:items:)` for a listing narrowed by several fields: `otherListing` says which
    /// listing a token of another came from (given whether that is the whole list) and how to ask for it.
    public func afterTimeKey(
        in listing: String, call: String, otherListing: (_ ofTheWholeList: Bool) -> String
    ) throws(RPCError) -> (ms: Int64, tieBreaker: Substring)? {
        guard let after else { return nil }
        guard let mark = after.lastIndex(of: Self.listingMark),
            let colon = after[mark...].firstIndex(of: ":"),
            let ms = Int64(after[after.index(after: mark)..<colon])
        else { throw Self.misplaced(call) }
        guard after[..<mark] == listing else {
            throw RPCError(
                .invalidArgument,
                "\(call): page_token \(otherListing(after[..<mark].isEmpty)), or start again with an empty page_token")
        }
        return (ms, after[after.index(after: colon)...])
    }

    /// The key of a row in a listing ordered by time then row (`afterTime`).
    public static func key(in listing: String, ms: Int64, row: Int64) -> String {
        key(in: listing, ms: ms, tieBreaker: "\(row)")
    }

    /// The key of an item in a listing ordered by time then a tie-breaker (`afterTimeKey`).
    public static func key(in listing: String, ms: Int64, tieBreaker: String) -> String {
        "\(listing)\(listingMark)\(ms):\(tieBreaker)"
    }

    /// Ends the listing's name in a key: the last unit separator of a key, so a name may hold one too.
    private static let listingMark: Character = "\u{1F}"

    private static func misplaced(_ call: String) -> RPCError {
        RPCError(
            .invalidArgument,
            "\(call): page_token does not name a place in this listing; start again with an empty page_token")
    }
}
