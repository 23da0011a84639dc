/// The ids a request names more than once (`digital_card_ids` at the issuer and at the TSP), for a refusal that
/// names them, so that they can be found in a long list.
public enum RepeatedIDs {
    /// Each id that comes again in `ids`, once, in the order it first comes again.
    public static func of(_ ids: [String]) -> [String] {
        var seen = Set<String>()
        var named = Set<String>()
        return ids.filter { !seen.insert($0).inserted && named.insert($0).inserted }
    }

    /// `"a", "b" and 3 more`: at most five ids named.
    public static func named(_ ids: [String]) -> String {
        let shown = ids.prefix(5).map { "\"\($0)\"" }.joined(separator: ", ")
        return ids.count > 5 ? "\(shown) and \(ids.count - 5) more" : shown
    }
}
