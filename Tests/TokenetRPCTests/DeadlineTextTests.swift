import Testing

@testable import TokenetRPC

/// The runtime's deadline messages as the CLI tells them: against the deadline the person gave, with what a command
/// added after them kept whole.
@Suite struct DeadlineTextTests {
    @Test func eachDeadlineMessageIsToldAgainstTheCommandsDeadline() {
        #expect(
            DeadlineText.toldAgainstCommandDeadline(
                "the call did not finish within its deadline (2994 ms)", given: "3000 ms")
                == "the call did not finish within the command's deadline of 3000 ms (2994 ms of it left when the call "
                + "started)")
        #expect(
            DeadlineText.toldAgainstCommandDeadline("the deadline passed", given: "3000 ms")
                == "the call did not finish within the command's deadline of 3000 ms (the node ended it as the "
                + "deadline passed)")
        #expect(
            DeadlineText.toldAgainstCommandDeadline("the deadline passed before /a.B/C started", given: "5 ms")
                == "the command's deadline of 5 ms ran out before /a.B/C started")
        #expect(DeadlineText.toldAgainstCommandDeadline("no such card", given: "3000 ms") == nil)
    }

    /// renew-card's hint, itself ending in parentheses, had the time left written into them.
    @Test func aHintAfterTheMessageIsKeptWhole() {
        let hint = "; the renewal may have reached the issuer and be pending (tokenet issuer cards shows it)"
        #expect(
            DeadlineText.toldAgainstCommandDeadline(
                "the call did not finish within its deadline (2994 ms)" + hint, given: "3000 ms")
                == "the call did not finish within the command's deadline of 3000 ms (2994 ms of it left when the call "
                + "started)" + hint)
        #expect(
            DeadlineText.toldAgainstCommandDeadline("the deadline passed" + hint, given: "3000 ms")
                == "the call did not finish within the command's deadline of 3000 ms (the node ended it as the "
                + "deadline passed)" + hint)
    }
}
