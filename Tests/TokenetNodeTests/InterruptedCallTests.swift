import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

@testable import TokenetNode

/// Ctrl-C on `tokenet call` cancels the call on the node and closes the connection in order before the command
/// dies by the signal. Dying on the spot, the CLI left the node to log the end of a TLS connection without
/// close_notify as a problem ("unexpected eof while reading") at info level, on every interrupted command.
@Suite(.timeLimit(.minutes(3))) struct InterruptedCallTests {
    let pki = DevelopmentPKI.shared

    @Test(arguments: [SIGINT, SIGTERM]) func aStopSignalCancelsTheCallAndClosesInOrder(signal: Int32) async throws {
        let data = try TemporaryDirectory()
        let node = try LaunchedProcess.tspNode(in: data, ["--log-level", "debug"])
        defer { node.process.send(SIGKILL) }
        let watch = try await watching(try await Self.address(of: node, in: data), ["-d", "{}"])
        defer { watch.process.send(SIGKILL) }

        watch.process.send(signal)
        let interrupted = try await watch.waitForExit(limit: 30)
        // Killed by the signal, as the shell expects of an interrupted command, with nothing printed about it.
        #expect(interrupted.reason == .uncaughtSignal && interrupted.status == signal, "\(interrupted)")
        #expect(interrupted.stderr.isEmpty, "\(interrupted.stderr)")

        // The node's handler ended as cancelled, and the connection closed without a problem.
        try await Self.waitForLog(of: node, "connection closed peer=tokenet://operator/")
        node.process.send(SIGTERM)
        let log = try await node.waitForExit(limit: 60).stderr
        #expect(log.contains("method=/tokenet.health.v1.Health/Watch peer=tokenet://operator/"), "\(log)")
        #expect(log.contains("status=CANCELLED"), "\(log)")
        #expect(!log.contains("problem="), "\(log)")
    }

    /// `-v` on an interrupted stream says CANCELLED: the interruption also ended the wait for stdout's reader, and
    /// the summary said "nobody reads its output any more" of output going to a file.
    @Test func aVerboseInterruptedStreamSaysCancelled() async throws {
        let data = try TemporaryDirectory()
        let node = try LaunchedProcess.tspNode(in: data)
        defer { node.process.send(SIGKILL) }
        let watch = try await watching(try await Self.address(of: node, in: data), ["-v"])
        defer { watch.process.send(SIGKILL) }
        watch.process.send(SIGINT)
        let interrupted = try await watch.waitForExit(limit: 30)
        #expect(interrupted.reason == .uncaughtSignal && interrupted.status == SIGINT, "\(interrupted)")
        #expect(interrupted.stderr.contains("received 1 response in "), "\(interrupted.stderr)")
        #expect(interrupted.stderr.hasSuffix(": CANCELLED\n"), "\(interrupted.stderr)")
        #expect(!interrupted.stderr.contains("nobody reads"), "\(interrupted.stderr)")
    }

    /// `tokenet call ADDR …Health/Watch FLAGS` as the operator, once it has printed the watch's first message.
    func watching(_ address: String, _ flags: [String]) async throws -> LaunchedProcess {
        let watch = try LaunchedProcess(
            "tokenet",
            ["call", address, "tokenet.health.v1.Health/Watch"] + flags + [
                "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
            ])
        do {
            _ = try await offThePool {
                try PythonClientInteropTests.waitFor(watch.process, "the watch's first message") {
                    let printed = (try? String(contentsOfFile: watch.directory.path("stdout"), encoding: .utf8)) ?? ""
                    return printed.contains("SERVING") ? printed : nil
                }
            }
        } catch {
            watch.process.send(SIGKILL)
            throw error
        }
        return watch
    }

    /// A client that leaves during its TLS handshake (a command interrupted while connecting) refused nothing: the
    /// node says so at debug, and writes no "handshake refused" line, which reads as a certificate problem.
    @Test func aClientThatLeavesDuringItsHandshakeIsNoRefusal() async throws {
        let data = try TemporaryDirectory()
        let node = try LaunchedProcess.tspNode(in: data, ["--log-level", "debug"])
        // Which step a run that outlived the suite's time limit was in (two full runs on a loaded machine did, with
        // nothing recorded but the limit), with the times, and the node's log.
        let started = ContinuousClock.now
        var step = "waiting for the node's ready file"
        var finished = false
        defer {
            node.process.send(SIGKILL)
            if !finished {
                let log = (try? String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8)) ?? ""
                print(
                    "aClientThatLeavesDuringItsHandshakeIsNoRefusal ended \(ContinuousClock.now - started) in: \(step); log:\n\(log)"
                )
            }
        }
        let address = try await Self.address(of: node, in: data)
        step = "connecting (ready after \(ContinuousClock.now - started))"
        let hostPort = try #require(HostPort(parsing: address))
        try #require(hostPort.host == "127.0.0.1", "\(address)")
        // Connected and closed on one thread, with nothing between the two: a connection made and closed by tasks
        // of a starved test runner stayed open past the node's 10 s handshake timeout, and the node rightly logged
        // a handshake that timed out instead of one the peer left.
        try await offThePool { try LoopbackSocket.connectAndClose(port: hostPort.port) }
        step = "waiting for the log line (closed after \(ContinuousClock.now - started))"
        // Within the suite's time limit, so that the node's log says how it took the close instead (one full run
        // waited out the limit here).
        let deadline = Date().addingTimeInterval(150)
        var written = ""
        while !written.contains("handshake abandoned: the peer closed the connection") {
            guard Date() < deadline else {
                Issue.record("no 'handshake abandoned' line in 150 s; the node's log:\n\(written)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
            written = (try? String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8)) ?? ""
        }
        step = "waiting for the node to stop (the line came after \(ContinuousClock.now - started))"
        node.process.send(SIGTERM)
        let log = try await node.waitForExit(limit: 60).stderr
        finished = true
        #expect(!log.contains("handshake refused"), "\(log)")
    }

    /// Where the node listens, once its ready file says so.
    private static func address(of node: LaunchedProcess, in data: TemporaryDirectory) async throws -> String {
        let readyFile = data.path("ready.json")
        return try await offThePool {
            try PythonClientInteropTests.waitFor(node.process, "tsp-node's ready file") {
                FileManager.default.fileExists(atPath: readyFile) ? try ReadyFile.read(from: readyFile).listen : nil
            }
        }
    }

    /// Waits until the node's log holds `text`.
    private static func waitForLog(of node: LaunchedProcess, _ text: String) async throws {
        _ = try await offThePool {
            try PythonClientInteropTests.waitFor(node.process, "'\(text)' in the node's log") {
                let log = (try? String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8)) ?? ""
                return log.contains(text) ? log : nil
            }
        }
    }
}
