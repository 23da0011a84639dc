/// The ids a request names more than once (`digital_card_ids` at the issuer and at the TSP), for a refusal that
/// names them, so that they can be found in a long list.
public enum RepeatedIDs {
    /// Each id that comes again in `ids`, once, in the order it first comes again.
    public static func of(_ ids: [String]) -> [String] {
        var seen = Set<String>()
        var named = Set<String>()
        return ids.filter { !seen.insert($0).inserted && named.insert($0).inserted }
    }

    /// The refusal of a `digital_card_ids` that names a token more than once, naming such tokens; nil when each is
    /// named once.
    public static func refusal(of ids: [String]) -> String? {
        let repeated = of(ids)
        guard !repeated.isEmpty else { return nil }
        return "digital_card_ids names \(named(repeated)) more than once; name each token once"
    }

    /// `"a", "b" and 3 more`: at most five ids named.
    public static func named(_ ids: [String]) -> String {
        let shown = ids.prefix(5).map { "\"\($0)\"" }.joined(separator: ", ")
        return ids.count > 5 ? "\(shown) and \(ids.count - 5) more" : shown
    }
}
