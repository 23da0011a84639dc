import Foundation
import Testing
import TokenetNode

/// How a JSON file's decoding error is put to the person who wrote the file.
struct DescribedErrorTests {
    private struct Limits: Decodable {
        var count: UInt32?
    }

    private func describe(_ json: String) -> String {
        do {
            _ = try JSONDecoder().decode(Limits.self, from: Data(json.utf8))
            return "decoded"
        } catch {
            return DescribedError(decoding: error, of: Data(json.utf8)).description
        }
    }

    /// A fraction or a negative number where a whole number goes is valid JSON, which Foundation's decoder calls
    /// "not valid JSON" naming no key.
    @Test(arguments: [#"{"count": 2.5}"#, #"{"count": -1}"#, #"{"count": 99999999999}"#])
    func aNumberThatDoesNotFitIsNotCalledInvalidJSON(json: String) {
        #expect(
            describe(json)
                == "a value in it does not fit its key, most likely a number (a fraction, a negative or too large a number where a whole number goes)"
        )
    }

    @Test func textThatIsNoJSONSaysWhere() {
        #expect(describe(#"{"count": }"#).hasPrefix("not valid JSON"))
        #expect(describe(#"{"count": 2}"#) == "decoded")
    }
}
