import Testing
import TokenetNode
import TokenetRPC

/// Page tokens are read strictly: a token with a stray "=" or one altered character is refused with
/// INVALID_ARGUMENT instead of being read as the key of another page.
@Suite struct PageRequestTokenTests {
    @Test func aTokenThisNodeMadeNamesItsKey() throws {
        for key in ["card-3", "0", "x", "tokens/DNITHE-1 2026"] {
            let page = try PageRequest(size: 10, token: PageRequest.token(after: key), call: "ListCards")
            #expect(page.after == key)
        }
    }

    @Test(arguments: [
        // "p1." + "Y2FyZC0z" is card-3: read by skipping each "=", these were card-3 too.
        "p1.Y2Fy=ZC0z",
        "p1.Y2FyZC0z====",
        "p1.Y2FyZC0z=",
        // One character more than a whole number of bytes.
        "p1.Y2FyZC0zA",
        "p1.Y2FyZC0z!",
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
