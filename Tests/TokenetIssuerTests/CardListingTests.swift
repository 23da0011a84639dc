import Testing
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// `IssuerControl/ListCards` in pages: every card once, in the order of its id, whatever the page size.
@Suite struct CardListingTests {
    let control: IssuerV1.IssuerControl.Client

    init() throws {
        let party = try Support.party()
        control = IssuerV1.IssuerControl.Client(Support.connect(Support.router(party), as: .operator))
    }

    @Test(arguments: [1, 2, 4, 9, 10, 0])
    func pagesListEveryCardOnceInOrder(pageSize: Int32) async throws {
        var request = IssuerV1.ListCardsRequest(pageSize: pageSize)
        var ids: [String] = []
        var pages = 0
        repeat {
            let page = try await control.listCards(request)
            #expect(page.cards.count <= (pageSize == 0 ? PageRequest.defaultSize : Int(pageSize)))
            ids += page.cards.map(\.cardID)
            request.pageToken = page.nextPageToken
            pages += 1
        } while !request.pageToken.isEmpty && pages <= Cards.all.count
        #expect(ids == Cards.all.map(\.0).sorted())
        let size = pageSize == 0 ? PageRequest.defaultSize : Int(pageSize)
        #expect(pages == (Cards.all.count + size - 1) / size)
    }

    @Test func aPageSizeOverTheMaximumIsReadAsTheMaximum() throws {
        #expect(try PageRequest(size: 50_000, token: "", call: "ListCards").size == PageRequest.maximumSize)
        #expect(try PageRequest(size: 0, token: "", call: "ListCards").size == PageRequest.defaultSize)
    }

    @Test func aTokenNamesTheCardThePageStartsAfter() throws {
        for id in ["card-visa-approve", "a", "ça/va?+", String(repeating: "z", count: 65)] {
            #expect(
                try PageRequest(size: 0, token: PageRequest.token(after: id, call: "ListCards"), call: "ListCards")
                    .after == id)
        }
    }

    @Test(arguments: [
        IssuerV1.ListCardsRequest(pageSize: -1),
        IssuerV1.ListCardsRequest(pageToken: "card-visa-approve"),
        IssuerV1.ListCardsRequest(pageToken: "p1."),
        IssuerV1.ListCardsRequest(pageToken: "p1.!!!"),
        IssuerV1.ListCardsRequest(pageToken: "p1._w"),  // base64 of a byte that is not UTF-8
    ])
    func aBadPageIsRefused(request: IssuerV1.ListCardsRequest) async throws {
        let error = await Support.rpcError { _ = try await control.listCards(request) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(request.pageSize < 0 ? "page_size" : "page_token") == true)
    }
}
