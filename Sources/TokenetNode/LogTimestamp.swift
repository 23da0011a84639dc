import Foundation

/// Formats log timestamps as UTC ISO 8601 with milliseconds (`2026-11-30T04:25:50.123Z`).
///
/// Done with `gmtime_r` rather than a shared date formatter so it is thread-safe without a lock.
enum LogTimestamp {
    static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        let milliseconds = min(999, Int((interval - interval.rounded(.down)) * 1000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds
        )
    }
}
