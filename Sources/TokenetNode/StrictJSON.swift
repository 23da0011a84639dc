import Foundation
import TokenetWire

/// The check a JSON file a node reads at start passes beside Foundation's decoder, which is lenient where a
/// mistake should be refused: it accepts a trailing comma (`{"a": 1,}`) and a leading zero, and of an object that
/// names a key twice it keeps one value and drops the other without a word, so an edited file could run with
/// the setting that was meant to be replaced.
public enum StrictJSON {
    /// Why `data` is not one strict JSON text (RFC 8259) whose objects each name a key once, or nil when it is.
    /// A repeated key is named with its place in the document (`"risk.accountScore" appears twice`); digit runs
    /// as long as a card number are masked, since the text quotes the file.
    ///
    /// A leading UTF-8 byte order mark is skipped, as Foundation's decoder skips it (RFC 8259 lets a parser ignore
    /// it): some editors write one, and a file the node reads must not be refused for what its editor cannot show.
    public static func problem(in data: Data) -> String? {
        let value: JSONValue
        let text = data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data
        do {
            value = try JSONValue(parsing: String(decoding: text, as: UTF8.self))
        } catch {
            return maskPAN("not valid JSON: \(error.message)")
        }
        return value.firstRepeatedKey.map { maskPAN("\"\($0)\" appears twice; give each key once") }
    }
}
