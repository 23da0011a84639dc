import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// A node stops within its drain timeout plus `StopDeadline.grace` whatever holds the stop up: here a log pipe that
/// nobody reads, which blocks the node's first write once it is full. Seen before the bound: such a node never
/// exited after SIGTERM.
@Suite struct StopDeadlineTests {
    @Test(.timeLimit(.minutes(3))) func aNodeWhoseLogPipeIsFullStillExitsAfterTheGrace() async throws {
        let scratch = try TemporaryDirectory()
        let readyFile = scratch.path("ready.json")
        // The node's stderr is a pipe, never read until the node is gone.
        let node = try SpawnedProcess(
            try BuiltExecutables.url(of: "tsp-node").path,
            [
                "--plaintext", "--listen", "127.0.0.1:0", "--data-dir", scratch.path("data"), "--ready-file", readyFile,
                "--drain-timeout", "1", "--log-level", "debug", "--parent-pid", "\(getpid())",
            ], standardOutput: .nullDevice, standardError: .pipe)
        let unread = try #require(node.standardError)
        defer { node.send(SIGKILL) }
        let deadline = Date().addingTimeInterval(120)
        while !FileManager.default.fileExists(atPath: readyFile), node.isRunning, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let address = try #require(HostPort(parsing: try ReadyFile.read(from: readyFile).listen))

        // Health checks until the pipe is full, each call a debug line: it holds most of its 64 KiB and has taken
        // nothing for half a second while calls kept coming, so the node is blocked writing its next line.
        let loop = try EventLoop(name: "test-stop-deadline")
        defer { loop.shutdown() }
        let raw = try await PlainConnection.connect(host: address.host, port: address.port, on: loop)
        let encoder = FrameEncoder()
        var hello: [UInt8] = []
        try encoder.encode(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &hello)
        try await raw.write(hello)
        var stream: UInt32 = 1
        var held: Int32 = 0
        var heldSince = (count: Int32(-1), at: ContinuousClock.now)
        var blocked = false
        for _ in 0..<2_000 where !blocked {
            var batch: [UInt8] = []
            for _ in 0..<20 {
                let start = WireV1.CallStart(method: HealthV1.Health.check.path)
                try encoder.encode(WireV1.Frame(streamID: stream, kind: .callStart(start)), into: &batch)
                try encoder.encode(WireV1.Frame(streamID: stream, kind: .message(WireV1.Message())), into: &batch)
                try encoder.encode(WireV1.Frame(streamID: stream, kind: .halfClose(WireV1.HalfClose())), into: &batch)
                stream += 2
            }
            try await raw.write(batch)
            try await Task.sleep(for: .milliseconds(10))
            _ = ioctl(unread.fileDescriptor, UInt(FIONREAD), &held)
            if held != heldSince.count { heldSince = (held, .now) }
            blocked = held >= 56 * 1024 && ContinuousClock.now - heldSince.at >= .milliseconds(500)
        }
        try #require(blocked, "the log pipe holds \(held) bytes and still takes more")

        let stopping = ContinuousClock.now
        node.send(SIGTERM)
        let termination = try await offThePool { node.waitUntilExit(killingAfter: 60) }
        let took = ContinuousClock.now - stopping
        #expect(termination == .init(reason: .exit, status: 1), "\(termination)")
        // The bound is the drain (1 s) plus the grace (10 s); a loaded machine may add to it, not 40 s.
        #expect(took >= .seconds(10) && took < .seconds(50), "stopped after \(took)")
        await raw.close()
    }
}
