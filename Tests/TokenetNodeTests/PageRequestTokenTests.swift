import Testing
import TokenetNode

@testable import TokenetRPC

/// Page tokens are read strictly: a token with a stray "=" or one altered character is refused with
/// INVALID_ARGUMENT instead of being read as the key of another page, and so is a token of another call.
@Suite struct PageRequestTokenTests {
    @Test func aTokenThisNodeMadeNamesItsKey() throws {
        for key in ["card-3", "0", "x", "tokens/DNITHE-1 2026"] {
            let first = try PageRequest(size: 10, token: "", call: "ListCards")
            let page = try PageRequest(size: 10, token: first.token(after: key), call: "ListCards")
            #expect(page.after == key)
        }
    }

    /// One listing's keys read as another's place (row numbers, in most): a token of the wallet's CurrentTokens
    /// paged its ListCards.
    @Test func aTokenOfAnotherCallIsRefused() throws {
        let token = PageRequest.token(after: "1", call: "CurrentTokens")
        let error = try #require(throws: RPCError.self) { try PageRequest(size: 10, token: token, call: "ListCards") }
        #expect(error.code == .invalidArgument)
        #expect(
            error.message
                == "ListCards: page_token is a next_page_token of another listing, not of ListCards; start again "
                + "with an empty page_token")
        // A token of the format before call names were in it.
        #expect(throws: RPCError.self) { try PageRequest(size: 10, token: "p1.MQ", call: "ListCards") }
    }

    /// Inside a served call a token carries the method's full path: the wallet's ListTransactions and the TSP's, or
    /// the wallet's ListCards and the issuer's, share a name, and each paged the other from a wrong place.
    @Test func aTokenOfAnotherServiceSameNamedCallIsRefused() throws {
        func served<T>(_ method: String, _ body: () throws -> T) rethrows -> T {
            let context = ServerContext(
                method: method, metadata: Metadata(), peer: nil, deadline: nil, traceID: "0000000000000ab")
            return try ServerContext.$current.withValue(context, operation: body)
        }
        let wallet = "/tokenet.wallet.v1.WalletControl/ListCards"
        let token = try served(wallet) { try PageRequest(size: 2, token: "", call: "ListCards").token(after: "2") }
        #expect(try served(wallet) { try PageRequest(size: 2, token: token, call: "ListCards").after } == "2")
        let error = try #require(throws: RPCError.self) {
            try served("/tokenet.issuer.v1.IssuerControl/ListCards") {
                try PageRequest(size: 2, token: token, call: "ListCards")
            }
        }
        #expect(error.message.contains("ListCards: page_token is a next_page_token of another listing"))
    }

    @Test(arguments: [
        // "p2." + "TGlzdENhcmRzH2NhcmQtMzAw" is ListCards, U+001F, card-300: read by skipping each "=", these were card-300.
        "p2.TGlzdENh=cmRzH2NhcmQtMzAw",
        "p2.TGlzdENhcmRzH2NhcmQtMzAw====",
        "p2.TGlzdENhcmRzH2NhcmQtMzAw=",
        // One character more than a whole number of bytes.
        "p2.TGlzdENhcmRzH2NhcmQtMzAwA",
        "p2.TGlzdENhcmRzH2NhcmQtMzAw!",
    ])
    func aMalformedTokenIsRefused(token: String) {
        #expect(throws: RPCError.self) { try PageRequest(size: 10, token: token, call: "ListCards") }
        do {
            _ = try PageRequest(size: 10, token: token, call: "ListCards")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("ListCards: page_token is not a next_page_token this node returned"))
        }
    }
}
