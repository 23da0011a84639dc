import Testing

@testable import TokenetTSP

/// The counts the TSP's login and resynchronisation answers say in words: "1 failures left" was said.
@Suite struct AuthenticationWordingTests {
    @Test func oneFailureIsSingular() {
        #expect(AuthenticationService.failures(1) == "1 failure")
        #expect(AuthenticationService.failures(UInt32(3)) == "3 failures")
        #expect(AuthenticationService.failures(0) == "0 failures")
    }
}
