import Foundation
import Testing
import TokenetTransport

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
            (
                "/nonexistent/dir/ready.json",
                "--ready-file: cannot write /nonexistent/dir/ready.json: its directory /nonexistent/dir does not exist; "
                    + "create it, or give another path"
            ),
            (directory.url.path, "--ready-file: \(directory.url.path) is a directory"),
        ] {
            let failure = try #require(throws: NodeError.self) { try ReadyFile.checkWritable(path) }
            #expect(failure.exitStatus == 2)
            #expect(failure.description.contains(message), "\(failure.description)")
        }
        try ReadyFile.checkWritable(directory.path("ready.json"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    /// The node replaces what is at the path and removes it at stop: `--ready-file /dev/null`, run as root,
    /// replaced the device with a file and then deleted it, and a node's own key file went the same way.
    @Test func onlyARegularFileThatIsEmptyOrAReadyFileIsReplaced() throws {
        let directory = try TemporaryDirectory()
        mkfifo(directory.path("fifo"), 0o600)
        try "{}".write(toFile: directory.path("target"), atomically: true, encoding: .utf8)
        symlink(directory.path("target"), directory.path("link"))
        try "-----BEGIN PRIVATE KEY-----\n".write(toFile: directory.path("key.pem"), atomically: true, encoding: .utf8)
        for (path, message) in [
            ("/dev/null", "--ready-file: /dev/null is a character device; the node replaces the file there"),
            (directory.path("fifo"), "is a FIFO"), (directory.path("link"), "is a symbolic link"),
            (directory.path("key.pem"), "holds something other than a ready file"),
        ] {
            let failure = try #require(throws: NodeError.self) { try ReadyFile.checkWritable(path) }
            #expect(failure.exitStatus == 2)
            #expect(failure.description.contains(message), "\(failure.description)")
        }
        let sameKey = try #require(throws: NodeError.self) {
            try ReadyFile.checkNotOneOf(
                directory.path("key.pem"), [("--cert", nil), ("--key", directory.path("key.pem"))])
        }
        #expect(sameKey.description.contains("is the node's --key file"))
        // An empty file (mktemp's) and an earlier node's ready file are taken.
        _ = FileManager.default.createFile(atPath: directory.path("empty"), contents: Data())
        try ReadyFile.checkWritable(directory.path("empty"))
        let written = try ReadyFile.write(ReadyInfo(node: "n", pid: 1, listen: "a:1"), to: directory.path("empty"))
        try ReadyFile.checkWritable(directory.path("empty"))
        // At stop, a file that took the path since is left alone; the node's own is removed.
        // Moved aside rather than deleted, so the new file cannot get the freed inode number.
        try FileManager.default.moveItem(atPath: directory.path("empty"), toPath: directory.path("moved"))
        _ = FileManager.default.createFile(atPath: directory.path("empty"), contents: Data("other".utf8))
        written.remove()
        #expect(FileManager.default.fileExists(atPath: directory.path("empty")))
        let again = try ReadyFile.write(ReadyInfo(node: "n", pid: 1, listen: "a:1"), to: directory.path("empty"))
        again.remove()
        #expect(!FileManager.default.fileExists(atPath: directory.path("empty")))
    }

    /// The ready file of a node that still runs is refused: taken, it named the second node, and that node's stop
    /// removed it from under the first. One whose node has gone, or whose pid another program holds now, is taken.
    @Test func aRunningNodesReadyFileIsRefused() throws {
        let directory = try TemporaryDirectory()
        let running = try SpawnedProcess("/bin/sleep", ["30"], standardOutput: .nullDevice, standardError: .nullDevice)
        defer { _ = running.waitUntilExit(killingAfter: 0) }
        let path = directory.path("ready.json")
        _ = try ReadyFile.write(ReadyInfo(node: "sleep", pid: running.pid, listen: "a:1"), to: path)
        let refused = try #require(throws: NodeError.self) { try ReadyFile.checkWritable(path) }
        #expect(refused.exitStatus == 2)
        #expect(
            refused.description
                == "--ready-file: \(path) is the ready file of sleep pid \(running.pid), which is running; "
                + "give each node a ready file of its own")
        // The same pid under another program's name, and a node that has gone.
        _ = try ReadyFile.write(ReadyInfo(node: "tsp-node", pid: running.pid, listen: "a:1"), to: path)
        try ReadyFile.checkWritable(path)
        _ = running.send(SIGKILL)
        _ = running.waitUntilExit()
        _ = try ReadyFile.write(ReadyInfo(node: "sleep", pid: running.pid, listen: "a:1"), to: path)
        try ReadyFile.checkWritable(path)
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
        #expect(
            result.stderr.contains(
                "--ready-file: cannot write /nonexistent/dir/ready.json: its directory /nonexistent/dir does not exist")
        )
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

    /// An I/O error (exit status 1), not a bad option (2): the location was checked before the node bound.
    @Test func unwritableLocationIsAnIOError() {
        let error = #expect(throws: NodeError.self) {
            try ReadyFile.write(ReadyInfo(node: "n", pid: 1, listen: "a:1"), to: "/nonexistent/dir/ready.json")
        }
        #expect(error?.code == .io, "\(String(describing: error))")
        #expect(
            error?.message.hasPrefix("cannot write ready file /nonexistent/dir/ready.json.tmp.") == true,
            "\(String(describing: error))")
    }
}
