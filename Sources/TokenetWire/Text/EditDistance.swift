/// How many one-character slips (insertions, deletions, substitutions) apart two names are: what the CLI and the
/// scenario checker use to say "did you mean …" for a misspelt method, field or saved name.
public enum EditDistance {
    /// The Levenshtein distance between `a` and `b`, or `limit + 1` once it is past `limit`.
    public static func between(_ a: String, _ b: String, atMost limit: Int) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard abs(a.count - b.count) <= limit else { return limit + 1 }
        guard !a.isEmpty, !b.isEmpty else { return min(max(a.count, b.count), limit + 1) }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            // Every way from here only adds slips.
            guard current.min() ?? 0 <= limit else { return limit + 1 }
            previous = current
        }
        return min(previous[b.count], limit + 1)
    }

    /// A name `typed` may have meant among `names`, when it is not one of them: those fewest slips away (one slip in a
    /// name of four letters or fewer, two in a longer one), compared without case.
    public static func closest(to typed: String, among names: [String]) -> [String] {
        let lowered = typed.lowercased()
        let slips = lowered.count <= 4 ? 1 : 2
        let distances = names.map { between($0.lowercased(), lowered, atMost: slips) }
        guard let fewest = distances.min(), fewest <= slips else { return [] }
        return zip(names, distances).filter { $0.1 == fewest }.map(\.0)
    }
}
