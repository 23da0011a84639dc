import Testing

@testable import TokenetCard

/// A card number as a person types or pastes it (`PAN.digits(typed:)`), which the wallet's card form and the
/// issuer's renewal both take.
@Suite struct PANTypedTests {
    @Test(arguments: [
        ("4111111111111111", "4111111111111111"), ("4111 1111 1111 1111", "4111111111111111"),
        ("4111-1111-1111-1111", "4111111111111111"), (" 4111  1111 1111 1111 ", "4111111111111111"),
        ("4111 - 1111 - 1111 - 1111", "4111111111111111"), ("", ""), ("   ", ""),
    ])
    func groupsAsPrintedOrPastedGiveTheirDigits(typed: String, digits: String) {
        #expect(PAN.digits(typed: typed) == digits)
    }

    /// Hyphens at the ends or doubled were dropped with the rest, so `-5400000020000068-` passed as a card number.
    @Test(arguments: [
        "-5400000020000068-", "-5400000020000068", "5400000020000068-", "5400--0000--2000--0068", "5400 -- 0000",
        "5400 - - 0000", "4111 1111 1111 111O", "4111.1111.1111.1111", "4111\t1111", "４１１１",
    ])
    func anythingElseIsRefused(typed: String) {
        #expect(PAN.digits(typed: typed) == nil)
    }
}
