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

    @Test func unwritableLocationIsAnIOError() {
        #expect(throws: NodeError.self) {
            try ReadyFile.write(ReadyInfo(node: "n", pid: 1, listen: "a:1"), to: "/nonexistent/dir/ready.json")
        }
    }
}
