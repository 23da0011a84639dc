import Testing

@testable import TokenetCard

/// The card form's checks of a cardholder name.
@Suite struct ManualCardFormTests {
    /// Counted in characters: a name of 34 Chinese characters (102 bytes) was "longer than 100 characters".
    @Test func aNameIsCountedInCharacters() {
        #expect(ManualCardForm.cardholderNameProblem(String(repeating: "李", count: 100)) == nil)
        #expect(ManualCardForm.cardholderNameProblem("Ζωή Παπαδοπούλου") == nil)
        #expect(
            ManualCardForm.cardholderNameProblem(String(repeating: "李", count: 101))
                == "the cardholder name is longer than 100 characters")
        // A character built of many scalars counts once, within a bound on the bytes.
        #expect(ManualCardForm.cardholderNameProblem(String(repeating: "e\u{301}", count: 100)) == nil)
        #expect(
            ManualCardForm.cardholderNameProblem("e" + String(repeating: "\u{301}", count: 500))?.hasPrefix(
                "the cardholder name takes more than 400 bytes") == true)
    }

    /// No name printed on a card holds a control or invisible character; one would act on what shows it.
    @Test(arguments: ["Ana\u{1B}[31m", "Ana\nLine", "Ana\u{7}", "Ana \u{202E}zurB", "Ana\u{200B}", "Ana\u{85}"])
    func aNameWithAControlOrInvisibleCharacterIsRefused(name: String) {
        #expect(ManualCardForm.cardholderNameProblem(name)?.hasPrefix("the cardholder name holds a control") == true)
    }
}
