/// A duration as a person reads it in a message: "500 µs", "1.5 ms", "1989 ms".
///
/// Deadlines and timeouts were written in whole milliseconds, so a deadline shorter than one (`--deadline 500us`)
/// was reported as "(0 ms)", a limit nobody had set. Below a millisecond the value is given in microseconds, below
/// a microsecond in nanoseconds; under 10 ms with a tenth, so that 1.5 ms does not read as 2; from 10 ms on in whole
/// milliseconds, as the messages always gave them (a 5-second deadline still reads "5000 ms").
public enum DurationText {
    public static func describe(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return "0 ms" }
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        if nanoseconds < 999.5 { return "\(Int64(nanoseconds.rounded())) ns" }
        if nanoseconds < 999_500 { return "\(Int64((nanoseconds / 1e3).rounded())) µs" }
        let milliseconds = nanoseconds / 1e6
        if milliseconds < 9.95 {
            let tenths = Int64((milliseconds * 10).rounded())
            return tenths % 10 == 0 ? "\(tenths / 10) ms" : "\(tenths / 10).\(tenths % 10) ms"
        }
        return milliseconds >= 9.2e18 ? "\(Int64.max) ms" : "\(Int64(milliseconds.rounded())) ms"
    }
}
