import Testing

@testable import TokenetRPC

/// A name a peer sent, as a status message or a log line shows it (`RPCServer.shown`): whole up to 256 bytes, else
/// cut there, where a character starts, with its length.
@Suite struct ShownNameTests {
    @Test func aShortNameIsShownWhole() {
        #expect(RPCServer.shown("tokenet.health.v1.Health") == "tokenet.health.v1.Health")
        #expect(RPCServer.shown(String(repeating: "€", count: 85)) == String(repeating: "€", count: 85))
    }

    /// "€" is three bytes: 256 bytes end inside the 86th, whose first byte decoded as U+FFFD.
    @Test func aLongNameIsCutWhereACharacterStarts() {
        let shown = RPCServer.shown(String(repeating: "€", count: 100))
        #expect(shown == String(repeating: "€", count: 85) + "... (300 bytes)")
        #expect(!shown.contains("\u{FFFD}"))
        #expect(
            RPCServer.shown(String(repeating: "a", count: 300)) == String(repeating: "a", count: 256)
                + "... (300 bytes)")
    }
}
