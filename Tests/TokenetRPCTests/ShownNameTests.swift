import Testing

@testable import TokenetRPC

/// A name a peer sent, as a status message or a log line shows it (`RPCServer.shown`): whole up to 256 bytes, else
/// cut there, where a character starts and outside a number, with its length.
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

    /// A card number the cut would split is left out whole, with the digits and separators before it: its first
    /// eleven or twelve digits, too few to be masked as a card number, were shown in clear.
    @Test(arguments: [241, 244, 250, 255])
    func aNumberTheCutWouldSplitIsLeftOutWhole(lead: Int) {
        for number in ["4761000010000009", "4761 0000 1000 0009", "4761-0000-1000-0009"] {
            let name = String(repeating: "a", count: lead) + number + String(repeating: "b", count: 50)
            let shown = RPCServer.shown(name)
            #expect(shown == String(repeating: "a", count: lead) + "... (\(name.utf8.count) bytes)", "\(number)")
        }
        // Digits the cut does not reach are kept, and so is a number ending before it.
        let before = "svc.4761000010000009." + String(repeating: "c", count: 300)
        #expect(RPCServer.shown(before).hasPrefix("svc.4761000010000009.ccc"))
        // All digits: nothing is shown but the length.
        #expect(RPCServer.shown(String(repeating: "7", count: 300)) == "... (300 bytes)")
        // Digits of other scripts are numbers too.
        let arabic = String(repeating: "x", count: 250) + String(repeating: "\u{0664}", count: 16)
        #expect(RPCServer.shown(arabic) == String(repeating: "x", count: 250) + "... (282 bytes)")
    }

    /// A metadata key is cut at 64 characters, and not inside a number either.
    @Test func aMetadataKeyIsNotCutInsideANumber() throws {
        var metadata = Metadata()
        metadata.add("tokenet-" + String(repeating: "k", count: 47) + "4761000010000009zz", .text("x"))
        let problem = try #require(metadata.problem)
        #expect(problem.hasPrefix("metadata key \"tokenet-" + String(repeating: "k", count: 47) + "\" (cut short)"))
        #expect(!problem.contains("476100"), "\(problem)")
    }
}
