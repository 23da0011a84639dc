import Testing
import TokenetNode
import TokenetRPC

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

    @Test(arguments: [
        // "p2." + "TGlzdENhcmRzL2NhcmQtMzAw" is ListCards/card-300: read by skipping each "=", these were card-300.
        "p2.TGlzdENh=cmRzL2NhcmQtMzAw",
        "p2.TGlzdENhcmRzL2NhcmQtMzAw====",
        "p2.TGlzdENhcmRzL2NhcmQtMzAw=",
        // One character more than a whole number of bytes.
        "p2.TGlzdENhcmRzL2NhcmQtMzAwA",
        "p2.TGlzdENhcmRzL2NhcmQtMzAw!",
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
