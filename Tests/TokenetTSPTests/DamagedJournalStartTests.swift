import Foundation
import Testing
import TokenetNode
import TokenetStorage
import TokenetTransport

@testable import TokenetTSP

/// A damaged page met by the TSP's first reads of its work (the notification journal's), past the opening, stops the
/// node as a damaged file found at the opening does: status 2, with the file and what to do. It was status 1, as a
/// node failing while running.
@Suite struct DamagedJournalStartTests {
    @Test func aDamagedJournalPageStopsTheStartWithWhatToDo() throws {
        let directory = try TSPHarness.temporaryDirectory()
        let keys = directory + "/keys"
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        try TSPHarness.tspKey.write(toFile: keys + "/card-key-current.pem")
        let loop = try EventLoop(name: "tsp-damaged-journal-test")
        defer { loop.shutdown() }
        let logger = Logger(node: "tsp-node", sink: MemoryLogSink())

        func start() throws(NodeError) {
            let outgoing = NodeOutgoing()
            let resources = NodeResources()
            defer {
                outgoing.cancelTasks()
                resources.closeAll(logger: logger)
            }
            let context = NodeContext(
                options: NodeOptions(), logger: logger, dataDirectory: directory, eventLoop: loop, outgoing: outgoing,
                resources: resources)
            _ = try TSPNode.services(
                context, configuration: TSPHarness.configuration, accessTokens: nil, notifications: RecordingPublisher()
            )
        }
        try start()

        let path = directory + "/tsp.sqlite"
        let database = try Database.open(path: path)
        let root = try #require(
            try database.queryOne("SELECT rootpage FROM sqlite_master WHERE name = 'notification_journal'")?.int(0))
        let pageSize = try #require(try database.queryOne("PRAGMA page_size")?.int(0))
        try database.close()
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try file.seek(toOffset: UInt64((root - 1) * pageSize))
        try file.write(contentsOf: Data(repeating: 0x5A, count: Int(pageSize)))
        try file.close()

        let error = #expect(throws: NodeError.self) { try start() }
        #expect(error?.exitStatus == 2, "\(String(describing: error))")
        #expect(
            error?.message == "the TSP database \(path) is damaged: restore it from a backup, with its vault key",
            "\(String(describing: error))")
    }
}
