import Testing
import TokenetTestSupport

/// The test helper that looks for a code where it stands as a value, not inside a random id.
struct SecretMentionTests {
    @Test func aCodeStandingAsAValueIsFound() {
        #expect(mentionsAsNumber("482913", "482913"))
        #expect(mentionsAsNumber("info tsp-node: code=482913 card=…0017", "482913"))
        #expect(mentionsAsNumber(#"{"code":"482913"}"#, "482913"))
        #expect(mentionsAsNumber("the code 482913.", "482913"))
    }

    @Test func aCodeInsideALongerIdIsNot() {
        #expect(!mentionsAsNumber("token DNITHE12482913999 active", "482913"))
        #expect(!mentionsAsNumber("trace_id=0a48291b3c", "48291"))
        #expect(!mentionsAsNumber("4829130", "482913"))
        #expect(!mentionsAsNumber("", "482913"))
        #expect(!mentionsAsNumber("48291", "482913"))
    }
}
