import Foundation
import Testing

@testable import TokenetNode

@Suite struct ReadyFileTests {
    @Test func readyLineRoundTrips() {
        let info = ReadyInfo(node: "issuer-node", pid: 4242, listen: "[::1]:7002")
        #expect(info.line == "READY issuer-node pid=4242 listen=[::1]:7002")
        #expect(ReadyInfo(line: info.line) == info)
        #expect(ReadyInfo(line: "READY issuer-node pid=x listen=a:1") == nil)
        #expect(ReadyInfo(line: "hello") == nil)
    }

    @Test func writesJSONAtomicallyAndReadsItBack() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ready.json")
        let info = ReadyInfo(node: "tsp-node", pid: 7, listen: "127.0.0.1:7001")
        try ReadyFile.write(info, to: path)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text == #"{"listen":"127.0.0.1:7001","node":"tsp-node","pid":7}"# + "\n")
        #expect(try ReadyFile.read(from: path) == info)
        // Only the final file remains: the temporary one was renamed, not copied.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["ready.json"])
    }

    /// Checked before the node binds, so a bad --ready-file never follows a READY line; the check leaves nothing.
    @Test func aLocationThatCannotTakeTheFileIsABadOption() throws {
        let directory = try TemporaryDirectory()
        for (path, message) in [
            ("/nonexistent/dir/ready.json", "--ready-file: cannot write /nonexistent/dir/ready.json.tmp."),
            (directory.url.path, "--ready-file: \(directory.url.path) is a directory"),
        ] {
            let failure = try #require(throws: NodeError.self) { try ReadyFile.checkWritable(path) }
            #expect(failure.exitStatus == 2)
            #expect(failure.description.contains(message), "\(failure.description)")
        }
        try ReadyFile.checkWritable(directory.path("ready.json"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    /// A node with an unusable --ready-file stops with status 2 before it prints READY or binds.
    @Test func aNodeWithAnUnwritableReadyFileNeverSaysReady() async throws {
        let directory = try TemporaryDirectory()
        let result = try await LaunchedProcess.run(
            "tsp-node",
            [
                "--plaintext", "--data-dir", directory.path("data"), "--ready-file",
                "/nonexistent/dir/ready.json",
            ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(!result.stdout.contains("READY"))
        #expect(result.stderr.contains("--ready-file: cannot write /nonexistent/dir/ready.json.tmp."))
        #expect(result.stderr.contains("No such file or directory"))
    }

    /// A ready file named as the data directory (not there yet when checked, then made by the node) was found
    /// only after READY; it is a bad option before anything starts.
    @Test func aReadyFileThatIsTheDataDirectoryIsABadOption() async throws {
        let directory = try TemporaryDirectory()
        let result = try await LaunchedProcess.run(
            "tsp-node",
            [
                "--plaintext", "--listen", "127.0.0.1:0", "--data-dir", directory.path("data"), "--ready-file",
                directory.path("data/"),
            ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(!result.stdout.contains("READY"), "\(result.stdout)")
        // Not the path itself: the log masks a run of its digits (a temporary directory's UUID) as a card number.
        #expect(result.stderr.contains("/data is the node's data directory; name a file"), "\(result.stderr)")
    }

    @Test func unwritableLocationIsAnIOError() {
        #expect(throws: NodeError.self) {
            try ReadyFile.write(ReadyInfo(node: "n", pid: 1, listen: "a:1"), to: "/nonexistent/dir/ready.json")
        }
    }
}
