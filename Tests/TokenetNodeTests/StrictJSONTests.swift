import Foundation
import Testing

@testable import TokenetNode

@Suite struct StrictJSONTests {
    static let byteOrderMark = Data([0xEF, 0xBB, 0xBF])

    @Test func refusesWhatFoundationLetsThrough() {
        #expect(StrictJSON.problem(in: Data(#"{"a": 1}"#.utf8)) == nil)
        #expect(StrictJSON.problem(in: Data(#"{"a": 1, "a": 2}"#.utf8))?.contains("\"a\" appears twice") == true)
        #expect(StrictJSON.problem(in: Data(#"{"a": 1,}"#.utf8)) != nil)
    }

    /// A file an editor saved with a byte order mark is read as Foundation's decoder reads it, not refused as
    /// invalid at its first byte.
    @Test func skipsAByteOrderMark() {
        #expect(StrictJSON.problem(in: Self.byteOrderMark + Data(#"{"a": 1}"#.utf8)) == nil)
        #expect(
            StrictJSON.problem(in: Self.byteOrderMark + Data(#"{"a": 1, "a": 2}"#.utf8))?.contains("appears twice")
                == true)
        #expect(StrictJSON.problem(in: Self.byteOrderMark + Self.byteOrderMark + Data("{}".utf8)) != nil)
    }
}
