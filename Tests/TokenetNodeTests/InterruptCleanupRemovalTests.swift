import Foundation
import Testing

@testable import TokenetNode

/// The cleanup's removal on a stop signal may race the tool's own `defer` removing the same tree; the directory
/// (with the PKI's CA key) must be gone either way.
struct InterruptCleanupRemovalTests {
    @Test(.timeLimit(.minutes(3))) func aTreeRemovedByAnotherThreadAtOnceIsGone() throws {
        let scratch = try TemporaryDirectory()
        for round in 0..<50 {
            let tree = scratch.path("pki-\(round)")
            try FileManager.default.createDirectory(
                atPath: tree + "/nested", withIntermediateDirectories: true)
            for index in 0..<40 {
                let name = index.isMultiple(of: 2) ? "\(tree)/file-\(index).pem" : "\(tree)/nested/file-\(index).key"
                try Data(repeating: 7, count: 512).write(to: URL(fileURLWithPath: name))
            }
            let other = Thread { try? FileManager.default.removeItem(atPath: tree) }
            other.start()
            #expect(InterruptCleanup.removeUntilGone(tree), "round \(round)")
            #expect(!FileManager.default.fileExists(atPath: tree), "round \(round)")
        }
    }

    @Test func aPathAlreadyGoneCountsAsRemoved() throws {
        let scratch = try TemporaryDirectory()
        #expect(InterruptCleanup.removeUntilGone(scratch.path("never-made")))
    }
}
