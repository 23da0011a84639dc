import Testing

@testable import TokenetFaults

@Suite struct FaultCommandTests {
    @Test func commandsParse() throws {
        #expect(try FaultCommand.parse("heal") == .set(.none))
        #expect(try FaultCommand.parse("  None ") == .set(.none))
        #expect(try FaultCommand.parse("delay 200ms") == .set(.delay(.milliseconds(200))))
        #expect(try FaultCommand.parse("delay 1.5s") == .set(.delay(.milliseconds(1500))))
        #expect(try FaultCommand.parse("DELAY 250us") == .set(.delay(.microseconds(250))))
        #expect(try FaultCommand.parse("delay 0ms") == .set(.delay(.zero)))
        #expect(try FaultCommand.parse("delay 2m") == .set(.delay(.seconds(120))))
        #expect(try FaultCommand.parse("delay 0.5m to-client") == .set(.delay(.seconds(30)), only: .toClient))
        #expect(try FaultCommand.parse("delay 1m30s") == .set(.delay(.seconds(90))))
        #expect(try FaultCommand.parse("delay 1m2s3ms4us") == .set(.delay(.microseconds(62_003_004))))
        #expect(try FaultCommand.parse("delay 1s250ms") == .set(.delay(.milliseconds(1250))))
        #expect(try FaultCommand.parse("delay +2s") == .set(.delay(.seconds(2))))
        #expect(try FaultCommand.parse("partition") == .set(.partition))
        #expect(try FaultCommand.parse("refuse") == .set(.refuse))
        #expect(try FaultCommand.parse("reset") == .reset)
        #expect(try FaultCommand.parse("status") == .status)
        #expect(try FaultCommand.parse("partition to-client") == .set(.partition, only: .toClient))
        #expect(try FaultCommand.parse("delay 2s TO-SERVER") == .set(.delay(.seconds(2)), only: .toUpstream))
        #expect(try FaultCommand.parse("heal to-client") == .set(.none, only: .toClient))
    }

    @Test func badLinesSayWhatIsAccepted() {
        for line in [
            "", "delay", "delay 5", "delay 1e3ms", "delay -1s", "delay 11m", "delay 1m30", "delay 5S", "delay 1M",
            "delay 1s+1s", "delay ++1s", "delay +",
            "partition now", "drop",
            "refuse to-client",
            "reset to-server", "partition to-client to-server", "to-client",
        ] {
            #expect(throws: FaultError.self, "\(line)") { try FaultCommand.parse(line) }
        }
        let error = #expect(throws: FaultError.self) { try FaultCommand.parse("drop") }
        #expect(error?.message == "unknown command 'drop' (commands: \(FaultCommand.summary))")
        let long = #expect(throws: FaultError.self) { try FaultCommand.parse("delay 601s") }
        #expect(long?.message == "delay '601s' is longer than the limit of 10 minutes")
        let minutes = #expect(throws: FaultError.self) { try FaultCommand.parse("delay 11m") }
        #expect(minutes?.message == "delay '11m' is longer than the limit of 10 minutes")
    }

    /// A command's name with the wrong words after it says what is missing or wrong, not "unknown command".
    @Test func aKnownCommandUsedWronglySaysWhatIsWrong() {
        let directions = "is not a direction; write to-server or to-client, or nothing for both"
        for (line, message) in [
            ("delay", "delay needs a DURATION, such as 'delay 200ms' (and optionally to-server or to-client)"),
            ("partition sideways", "partition: 'sideways' \(directions)"),
            ("delay 2s both", "delay: 'both' \(directions)"),
            ("delay to-server 2s", "delay takes the DURATION first, then the direction: 'delay 200ms to-server'"),
            (
                "heal to-client to-server",
                "heal takes one direction at most (to-server or to-client); without one it applies to both"
            ),
            ("refuse to-client", "refuse takes nothing after it (it applies to both directions)"),
            ("status now", "status takes nothing after it (it shows both directions of every link)"),
            (
                "delay 0.0000001s",
                "delay '0.0000001s' is shorter than 1us, the finest delay the proxy keeps; 0ms lifts a delay"
            ),
            ("delay 5", "expected a duration such as 200ms, 1.5s, 250us or 2m, got '5' (with a unit: 5s for seconds)"),
            (
                "delay 1m30",
                "expected a duration such as 200ms, 1.5s, 250us or 2m, got '1m30' (with a unit: 1m30s for seconds)"
            ),
            ("delay 5S", "expected a duration such as 200ms, 1.5s, 250us or 2m, got '5S' (units are lower case: 5s)"),
            (
                "delay 1s1s",
                "expected a duration such as 200ms, 1.5s, 250us or 2m, got '1s1s' (each unit once, the longest first, "
                    + "as in 1m30s)"
            ),
            (
                "delay 30s1m",
                "expected a duration such as 200ms, 1.5s, 250us or 2m, got '30s1m' (each unit once, the longest first, "
                    + "as in 1m30s)"
            ),
            (
                "delay 1us1µs",
                "expected a duration such as 200ms, 1.5s, 250us or 2m, got '1us1µs' (each unit once, the longest first, "
                    + "as in 1m30s)"
            ),
        ] {
            let error = #expect(throws: FaultError.self, "\(line)") { try FaultCommand.parse(line) }
            #expect(error?.message == message, "\(line)")
        }
    }

    @Test func faultsDescribeThemselvesAsCommands() throws {
        for line in ["none", "delay 200ms", "delay 1500ms", "delay 2s", "delay 250us", "partition", "refuse"] {
            let command = try FaultCommand.parse(line)
            guard case .set(let fault, _) = command else {
                Issue.record("\(line) is not a fault")
                continue
            }
            #expect(try FaultCommand.parse(fault.description) == command, "\(line) → \(fault)")
        }
        #expect(Fault.delay(.milliseconds(2000)).description == "delay 2s")
        // A summary of one direction's faults reads back as the commands that set them.
        var machine = FaultProxyStateMachine()
        _ = machine.set(.delay(.milliseconds(20)), only: .toUpstream, at: .now)
        _ = machine.set(.partition, only: .toClient, at: .now)
        let commands = try machine.summary.split(separator: ",").map {
            let words = $0.split(separator: " ")
            return try FaultCommand.parse((words.dropFirst() + [words[0]]).joined(separator: " "))
        }
        #expect(commands == [.set(.delay(.milliseconds(20)), only: .toUpstream), .set(.partition, only: .toClient)])
    }
}
