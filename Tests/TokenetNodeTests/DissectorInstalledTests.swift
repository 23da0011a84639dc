import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// tokenet-shark and a plain tshark once `Tools/dissector/install` has put the dissector in the user's Lua plugins
/// folder (a capture written byte for byte, `PlaintextCapture`; needs tshark, not root).
@Suite struct DissectorInstalledTests {
    static func run(home: String, _ arguments: [String]) async throws -> ProcessResult {
        try await offThePool { () throws -> ProcessResult in
            try LaunchedProcess(
                executable: URL(fileURLWithPath: "/usr/bin/env"), ["HOME=\(home)", "XDG_CONFIG_HOME="] + arguments
            ).waitForExit(limit: 120)
        }
    }

    /// With the plugin installed, tokenet-shark also loaded the script itself, and tshark printed "Proto_new: there
    /// cannot be two protocols with the same description" on every run; a plain tshark given the script again did
    /// the same.
    @Test func theInstalledPluginIsLoadedOnce() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40061)
        let call = try DissectorCaptureTests.checkCall(stream: 1, trace: "0000000000000a1")
        capture.send(
            try PlaintextCapture.bytes([DissectorCaptureTests.hello()]) + call.client, on: &connection,
            fromClient: true)
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try capture.write(to: path)
        let home = directory.path("home")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let install = try await Self.run(home: home, [PackageRoot.path("Tools/dissector/install")])
        #expect(install.status == 0, "\(install.stderr)")
        let script = PackageRoot.path("Tools/dissector/tokenet.lua")
        for arguments in [
            [PackageRoot.path("Tools/dissector/tokenet-shark"), "-r", path],
            ["tshark", "-X", "lua_script:\(script)", "-r", path, "-Y", "tokenet"],
        ] {
            let result = try await Self.run(home: home, arguments)
            #expect(result.status == 0, "\(arguments[0]): \(result.stderr)")
            #expect(!result.stderr.contains("Lua"), "\(arguments[0]): \(result.stderr)")
            #expect(result.stdout.contains("1 call_start \(DissectorCaptureTests.check)"), "\(result.stdout)")
        }
    }

    /// Another revision of the dissector in the plugins folder (here a subfolder, which tshark loads too) is the one
    /// that decodes, and an older one shows what this one masks: tokenet-shark refuses it, and this file, given
    /// after it with -X lua_script:, says so.
    @Test func anotherRevisionInstalledIsRefused() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40062)
        capture.send(try PlaintextCapture.bytes([DissectorCaptureTests.hello()]), on: &connection, fromClient: true)
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try capture.write(to: path)
        let home = directory.path("home")
        let folder = home + "/.local/lib/wireshark/plugins/old"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let script = PackageRoot.path("Tools/dissector/tokenet.lua")
        let older = try String(contentsOfFile: script, encoding: .utf8) + "-- an older revision\n"
        try older.write(toFile: folder + "/tokenet.lua", atomically: true, encoding: .utf8)

        let shark = try await Self.run(home: home, [PackageRoot.path("Tools/dissector/tokenet-shark"), "-r", path])
        #expect(shark.status == 2, "\(shark.stdout)")
        #expect(
            shark.stderr.contains("\(folder)/tokenet.lua is another revision of the Tokenet dissector"),
            "\(shark.stderr)")
        #expect(shark.stderr.contains("remove it"), "\(shark.stderr)")

        let plain = try await Self.run(home: home, ["tshark", "-X", "lua_script:\(script)", "-r", path])
        #expect(
            plain.stderr.contains("another revision of the Tokenet dissector (\(folder)/tokenet.lua) was loaded"),
            "\(plain.stderr)")
    }
}
