import TokenetTransport

/// A line of the proxy's control input (`tokenet proxy` reads them from standard input), parsed.
///
///     none | heal [DIRECTION]          lift the fault (of one direction); what a delay holds goes on at once
///     delay 200ms [DIRECTION]          hold each chunk back (µs, ms, s, m; at most 10 minutes)
///     partition [DIRECTION]            carry nothing until lifted
///     refuse                           close new connections at once
///     reset                            cut every connection now with a TCP reset (the faults stay)
///     status                           print the faults and the number of connections
///
/// DIRECTION is `to-server` (what clients send) or `to-client` (what servers answer); without it, both.
public enum FaultCommand: Sendable, Equatable {
    case set(Fault, only: FaultProxyStateMachine.Direction? = nil)
    case reset
    case status

    /// The commands that change a link, as a scenario's `fault` line takes them, for usage messages.
    public static let changes =
        "none | heal | delay DURATION | partition (each optionally to-server or to-client) | refuse | reset"

    /// The commands, for usage messages.
    public static let summary = changes + " | status"

    /// Parses one line; surrounding spaces and case do not matter. Throws `FaultError(.badCommand)` naming the
    /// line and what is accepted.
    public static func parse(_ line: String) throws(FaultError) -> FaultCommand {
        // Commands and directions in any case; a duration as typed, since its units are lower case everywhere
        // (`1M` read as one minute, or `5S` taken here and refused by --delay, would surprise).
        let typed = line.split(whereSeparator: \.isWhitespace).map(String.init)
        var words = typed.map { $0.lowercased() }
        var direction: FaultProxyStateMachine.Direction?
        if let last = words.last, words.count > 1, let named = Self.direction(last) {
            direction = named
            words.removeLast()
        }
        switch (words.first, words.count) {
        case ("none", 1), ("heal", 1): return .set(.none, only: direction)
        case ("partition", 1): return .set(.partition, only: direction)
        case ("delay", 2): return .set(.delay(try duration(typed[1])), only: direction)
        case ("refuse", 1) where direction == nil: return .set(.refuse)
        case ("reset", 1) where direction == nil: return .reset
        case ("status", 1) where direction == nil: return .status
        default:
            if let misuse = misuse(words) { throw FaultError(.badCommand, misuse) }
            // A scenario's `fault LINK` with nothing after the link read "unknown command ''".
            if words.isEmpty { throw FaultError(.badCommand, "expected a command (commands: \(summary))") }
            let shown = ShownPrefix.shortened(line, scalarLimit: 80)
            throw FaultError(.badCommand, "unknown command '\(shown)' (commands: \(summary))")
        }
    }

    /// What is wrong with a line that starts with a command's name, or nil when it names none: "unknown command
    /// 'delay'" said nothing of the duration it lacked, nor "unknown command 'partition sideways'" of the direction.
    private static func misuse(_ words: [String]) -> String? {
        guard let command = words.first else { return nil }
        let extra: ArraySlice<String>
        switch command {
        case "delay" where words.count == 1:
            return "delay needs a DURATION, such as 'delay 200ms' (and optionally to-server or to-client)"
        case "delay" where words.count > 2 && direction(words[1]) != nil:
            return "delay takes the DURATION first, then the direction: 'delay 200ms \(words[1])'"
        case "delay": extra = words.dropFirst(2)
        case "none", "heal", "partition": extra = words.dropFirst()
        case "refuse", "reset":
            return "\(command) takes nothing after it (it applies to both directions)"
        case "status":
            return "status takes nothing after it (it shows both directions of every link)"
        default: return nil
        }
        if extra.allSatisfy({ direction($0) != nil }) {
            return "\(command) takes one direction at most (to-server or to-client); without one it applies to both"
        }
        let shown = extra.joined(separator: " ")
        return "\(command): '\(ShownPrefix.shortened(shown, scalarLimit: 40))' is not a direction; "
            + "write to-server or to-client, or nothing for both"
    }

    private static func direction(_ word: String) -> FaultProxyStateMachine.Direction? {
        FaultProxyStateMachine.Direction.both.first { $0.description == word }
    }

    /// `250us`, `200ms`, `1.5s`, `2m`, or several parts such as `1m30s` (`DurationSyntax`, as the CLI's --deadline
    /// takes them): a duration of at most 10 minutes; `0ms` lifts a delay.
    public static func duration(_ text: String) throws(FaultError) -> Duration {
        guard let seconds = DurationSyntax.seconds(in: text) else {
            let hint = DurationSyntax.hint(for: text).map { " (\($0))" } ?? ""
            throw FaultError(.badCommand, "expected a duration such as 200ms, 1.5s, 250us or 2m, got '\(text)'\(hint)")
        }
        guard seconds <= 600 else {
            throw FaultError(.badCommand, "delay '\(text)' is longer than the limit of 10 minutes")
        }
        // Kept to the microsecond, as `format` shows it: `0.0000001s` was taken as a delay and shown as `0ms`.
        let microseconds = (seconds * 1e6).rounded()
        guard microseconds > 0 || seconds == 0 else {
            throw FaultError(
                .badCommand, "delay '\(text)' is shorter than 1us, the finest delay the proxy keeps; 0ms lifts a delay")
        }
        return .microseconds(Int64(microseconds))
    }

    /// `200ms`, `1.5s`, `250us`: the shortest of those forms that is exact to the microsecond.
    public static func format(_ duration: Duration) -> String {
        let microseconds = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        if microseconds % 1000 != 0 { return "\(microseconds)us" }
        let milliseconds = microseconds / 1000
        if milliseconds % 1000 != 0 || milliseconds == 0 { return "\(milliseconds)ms" }
        return "\(milliseconds / 1000)s"
    }
}
