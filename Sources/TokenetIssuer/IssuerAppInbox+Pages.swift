import TokenetNode
import TokenetWire

/// The pages of `IssuerAppInbox/Notifications`. The kept notifications are few (`capacity`), but the authentication
/// requests of a week (`IssuerRetention`) and the card ids of every renewed token can be many, so the three are one
/// listing in a fixed order of unique keys: notifications by the row they were kept under, then authentication
/// requests by the row of the message that asked them, then card ids by digital card id. A page holds up to `size`
/// items of the three together, and a token names the kind and key of the last item it listed (`n:ROW`, `a:ROW`,
/// `c:ID`).
extension IssuerAppInbox {
    /// Where a page starts: after this item, in this part of the listing.
    private enum Place: Comparable {
        case notification(row: Int64)
        case authn(row: Int64)
        case cardID(String)

        /// The place a page token's key names; nil for a key this listing did not make.
        init?(key: String) {
            guard key.count > 2, key.dropFirst().first == ":" else { return nil }
            let value = String(key.dropFirst(2))
            switch key.first {
            case "n":
                guard let row = Int64(value), row > 0 else { return nil }
                self = .notification(row: row)
            case "a":
                guard let row = Int64(value), row > 0 else { return nil }
                self = .authn(row: row)
            case "c": self = .cardID(value)
            default: return nil
            }
        }

        var key: String {
            switch self {
            case .notification(let row): "n:\(row)"
            case .authn(let row): "a:\(row)"
            case .cardID(let id): "c:\(id)"
            }
        }
    }

    /// The page `request` asks for at `nowMs` (a request past its expiry unanswered is listed EXPIRED);
    /// INVALID_ARGUMENT for a token that does not name a place in this listing (a token of another call).
    public func page(_ request: PageRequest, nowMs: UInt64) throws(IssuerError) -> IssuerV1.AppNotificationsResponse {
        var after: Place?
        if let key = request.after {
            guard let place = Place(key: key) else {
                throw IssuerError(
                    .invalidArgument,
                    "Notifications: page_token does not name a place in this listing; start again with an empty "
                        + "page_token")
            }
            after = place
        }
        var response = IssuerV1.AppNotificationsResponse()
        var listed = 0
        var last: Place?
        /// Lists the item at `place` if the page has room; false (the page is full) otherwise.
        func take(_ place: Place) -> Bool {
            guard listed < request.size else {
                response.nextPageToken = request.token(after: last!.key)
                return false
            }
            listed += 1
            last = place
            return true
        }
        // Requests past their expiry unanswered: the messages that asked them no longer invite an answer, as those of
        // answered requests do not ("proceed or cancel" beside a request listed EXPIRED).
        let expiredIDs = Set(
            authn.lazy.filter { Self.status(of: $0, nowMs: nowMs) == Self.expired && $0.request.status == Self.pending }
                .map(\.request.authnRequestID))
        for (index, row) in notificationRows.enumerated() where after.map({ .notification(row: row) > $0 }) ?? true {
            guard take(.notification(row: row)) else { return response }
            var entry = notifications[index]
            if !expiredIDs.isEmpty, case .authn(let body)? = entry.notification?.body,
                expiredIDs.contains(body.authnRequestID), entry.action.hasPrefix(Self.asking(body))
            {
                entry.action = Self.describeAnswered(body, status: Self.expired)
            }
            response.notifications.append(entry)
        }
        for kept in authn where after.map({ .authn(row: kept.row) > $0 }) ?? true {
            guard take(.authn(row: kept.row)) else { return response }
            response.authnRequests.append(Self.listed(kept, nowMs: nowMs))
        }
        for id in cardIdentities.keys.sorted() where after.map({ .cardID(id) > $0 }) ?? true {
            guard take(.cardID(id)) else { return response }
            response.cardIds.append(cardIdentities[id]!)
        }
        return response
    }
}
