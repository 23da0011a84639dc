import Foundation
import Testing
import TokenetNode

/// What stands in place of a settings file (a policy file, `wallet.json`) is named when it is no file to read; only
/// nothing at all means the defaults.
@Suite struct SettingsFileTests {
    @Test func onlyAMissingFileMeansTheDefaults() throws {
        let directory = try TemporaryDirectory()
        #expect(try SettingsFile.read(directory.path("none.json")) == nil)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: directory.path("ok.json")))
        #expect(try SettingsFile.read(directory.path("ok.json")) == Data("{}".utf8))
        try FileManager.default.createSymbolicLink(
            atPath: directory.path("link.json"), withDestinationPath: directory.path("ok.json"))
        #expect(try SettingsFile.read(directory.path("link.json")) == Data("{}".utf8))
    }

    @Test func whatIsNoFileToReadIsNamed() throws {
        let directory = try TemporaryDirectory()
        // A link whose target is gone read as no file, and the node ran on its defaults.
        try FileManager.default.createSymbolicLink(
            atPath: directory.path("dangling.json"), withDestinationPath: "../nowhere.json")
        let dangling = #expect(throws: NodeError.self) { try SettingsFile.read(directory.path("dangling.json")) }
        #expect(dangling?.exitStatus == 2)
        #expect(
            dangling?.description.contains("is a symbolic link to ../nowhere.json, which does not exist") == true,
            "\(String(describing: dangling))")
        // A pipe was "Permission denied", even to root.
        try #require(mkfifo(directory.path("pipe.json"), 0o600) == 0)
        let pipe = #expect(throws: NodeError.self) { try SettingsFile.read(directory.path("pipe.json")) }
        #expect(pipe?.description.contains("it is a pipe, not a file") == true, "\(String(describing: pipe))")
        try FileManager.default.createDirectory(atPath: directory.path("dir.json"), withIntermediateDirectories: true)
        let folder = #expect(throws: NodeError.self) { try SettingsFile.read(directory.path("dir.json")) }
        #expect(folder?.description.contains("it is a directory") == true)
        try Data(count: 2048).write(to: URL(fileURLWithPath: directory.path("big.json")))
        let big = #expect(throws: NodeError.self) { try SettingsFile.read(directory.path("big.json"), maxBytes: 1024) }
        #expect(big?.description.contains("holds 2048 bytes; a settings file holds at most 1024 bytes") == true)
    }
}
