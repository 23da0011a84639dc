import Testing
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// `IssuerAppInbox/Notifications` in pages: the kept notifications, then the authentication requests, then the card
/// ids resynchronised after renewals, each item once and in that order whatever the page size, also across a restart
/// of the app.
@Suite struct IssuerAppInboxListingTests {
    let store: IssuerStore
    let handler: IssuerAppNotificationHandler

    init() async throws {
        store = try Support.store()
        handler = try IssuerAppNotificationHandler(view: IssuerAppView(), logger: Support.logger(), store: store)
        try await Self.deliver(authn: 5, renewals: 4, to: handler)
    }

    /// `authn` AUTHN messages (ar-1…) and `renewals` CARD_RENEWAL messages, one per digital card (DC-1…), in turn.
    static func deliver(authn: Int, renewals: Int, to handler: IssuerAppNotificationHandler) async throws {
        for index in 1...max(authn, renewals) {
            if index <= authn {
                var message = IssuerAppInboxTests.message(
                    "AUTHN", body: .authn(.init(authnRequestID: "ar-\(index)", amountMinor: 100, currency: "USD")),
                    sender: "TNS")
                message.messageID = "m-a\(index)"
                try await handler.handle(message)
            }
            if index <= renewals {
                var message = IssuerAppInboxTests.message(
                    "CARD_RENEWAL",
                    body: .cardRenewal(.init(previousCardID: "c-\(index)", newCardID: "c-\(index)b", panLast4: "0054")),
                    cardID: "DC-\(index)")
                message.messageID = "m-r\(index)"
                try await handler.handle(message)
            }
        }
    }

    static func client(_ handler: IssuerAppNotificationHandler) -> IssuerV1.IssuerAppInbox.Client {
        var router = RPCRouter()
        IssuerAppInboxService(handler: handler, tsp: nil, logger: Support.logger()).register(on: &router)
        return IssuerV1.IssuerAppInbox.Client(Support.connect(router, as: .operator))
    }

    /// Every item of the listing, one line each, in listing order.
    static func lines(_ response: IssuerV1.AppNotificationsResponse) -> [String] {
        response.notifications.map { "n \($0.notification?.messageID ?? "")" }
            + response.authnRequests.map { "a \($0.authnRequestID)" }
            + response.cardIds.map { "c \($0.digitalCardID) \($0.cardID)" }
    }

    static let everything =
        ["m-a1", "m-r1", "m-a2", "m-r2", "m-a3", "m-r3", "m-a4", "m-r4", "m-a5"].map { "n \($0)" }
        + (1...5).map { "a ar-\($0)" } + (1...4).map { "c DC-\($0) c-\($0)b" }

    @Test(arguments: [1, 2, 4, 9, 17, 18, 0])
    func pagesListEveryItemOnceInOrder(pageSize: Int32) async throws {
        let app = Self.client(handler)
        var request = IssuerV1.AppNotificationsRequest(pageSize: pageSize)
        var lines: [String] = []
        var pages = 0
        repeat {
            let page = try await app.notifications(request)
            #expect(Self.lines(page).count <= (pageSize == 0 ? PageRequest.defaultSize : Int(pageSize)))
            lines += Self.lines(page)
            request.pageToken = page.nextPageToken
            pages += 1
        } while !request.pageToken.isEmpty && pages <= Self.everything.count
        #expect(lines == Self.everything)
        let size = pageSize == 0 ? PageRequest.defaultSize : Int(pageSize)
        #expect(pages == (Self.everything.count + size - 1) / size)
    }

    /// A token names a kept row, not a position, so a listing goes on where it was after the app restarts.
    @Test func aListingGoesOnAfterARestart() async throws {
        let first = try await Self.client(handler).notifications(.init(pageSize: 3))
        let restarted = try IssuerAppNotificationHandler(view: IssuerAppView(), logger: Support.logger(), store: store)
        let rest = try await Self.client(restarted).notifications(.init(pageToken: first.nextPageToken))
        #expect(Self.lines(first) + Self.lines(rest) == Self.everything)
        #expect(rest.nextPageToken.isEmpty)
    }

    @Test(arguments: [
        IssuerV1.AppNotificationsRequest(pageSize: -1),
        IssuerV1.AppNotificationsRequest(pageToken: "n:3"),
        IssuerV1.AppNotificationsRequest(pageToken: "p1.!!!"),
        // Tokens of other listings: an issuer's ListCards (a card id), a wallet's ListCards (a row id).
        IssuerV1.AppNotificationsRequest(
            pageToken: PageRequest.token(after: "card-visa-approve", call: "Notifications")),
        IssuerV1.AppNotificationsRequest(pageToken: PageRequest.token(after: "5", call: "Notifications")),
        IssuerV1.AppNotificationsRequest(pageToken: PageRequest.token(after: "n:x", call: "Notifications")),
        IssuerV1.AppNotificationsRequest(pageToken: PageRequest.token(after: "a:0", call: "Notifications")),
    ])
    func aBadPageIsRefused(request: IssuerV1.AppNotificationsRequest) async throws {
        let error = await Support.rpcError { _ = try await Self.client(handler).notifications(request) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(request.pageSize < 0 ? "page_size" : "page_token") == true)
    }
}
