import Foundation

/// Formats log timestamps as UTC ISO 8601 with milliseconds (`2026-11-30T04:25:50.123Z`).
///
/// Done with `gmtime_r` rather than a shared date formatter so it is thread-safe without a lock.
enum LogTimestamp {
    static func format(_ date: Date) -> String {
        // Round to whole microseconds first so binary floating point cannot turn .123 into .122.
        let microseconds = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        var seconds = time_t(microseconds.quotientAndRemainder(dividingBy: 1_000_000).quotient)
        let milliseconds = Int(microseconds.quotientAndRemainder(dividingBy: 1_000_000).remainder / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds
        )
    }
}
