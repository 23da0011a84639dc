import Testing

@testable import TokenetRPC

/// Durations as messages give them (`DurationText`), and the deadline a call was given as its DEADLINE_EXCEEDED
/// message says it.
@Suite struct DurationTextTests {
    @Test(arguments: [
        (Duration.nanoseconds(500), "500 ns"),
        (.microseconds(1), "1 µs"),
        (.microseconds(500), "500 µs"),
        (.nanoseconds(999_600), "1 ms"),
        (.milliseconds(1), "1 ms"),
        (.microseconds(1500), "1.5 ms"),
        (.microseconds(9940), "9.9 ms"),
        (.microseconds(9960), "10 ms"),
        (.milliseconds(1989), "1989 ms"),
        (.seconds(5), "5000 ms"),
        (.zero, "0 ns"),
        (.seconds(-1), "0 ms"),
        (.seconds(Int64.max), "\(Int64.max) ms"),
    ])
    func aDurationReadsInAUnitThatFitsIt(duration: Duration, text: String) {
        #expect(DurationText.describe(duration) == text)
    }

    /// A deadline under a millisecond was reported as "(0 ms)". The server may end the call first (its message names
    /// no duration): the call is made until the client's own check ends one, as it nearly always does at once.
    @Test(.timeLimit(.minutes(3))) func aSubMillisecondDeadlineIsNamedInMicroseconds() async throws {
        let setup = try await CallDeadlineTests.setUp(.inMemory, CallDeadlineTests.router())
        var messages: [String] = []
        for _ in 0..<20 {
            do {
                _ = try await setup.client.unary(
                    CallDeadlineTests.Echo.unary, CallDeadlineTests.Scalars(fString: "slow"),
                    options: CallOptions(timeout: .microseconds(500)))
                Issue.record("a call to a handler that sleeps for ten minutes ended within 500 µs")
            } catch let error as RPCError {
                #expect(error.code == .deadlineExceeded, "\(error)")
                messages.append(error.message)
                if error.message.contains("within its deadline") { break }
            }
        }
        let named = messages.first { $0.contains("within its deadline") }
        #expect(named == "the call did not finish within its deadline (500 µs)", "\(messages)")
        await setup.stop()
    }
}
