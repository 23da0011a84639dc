import Foundation
import Testing

@testable import TokenetNode

@Suite struct ProcessedNotificationLogTests {
    @Test func recordedIdsSurviveReopeningAndForgottenOnesDoNot() throws {
        let directory = try TemporaryDirectory()
        let log = try ProcessedNotificationLog.open(directory: directory.url.path)
        try log.record("a")
        try log.record("b")
        try log.record("c")
        try log.sync()
        log.forget(["b"])
        #expect(log.contains("a"))
        #expect(!log.contains("b"))

        let reopened = try ProcessedNotificationLog.open(directory: directory.url.path)
        #expect(reopened.contains("a"))
        #expect(!reopened.contains("b"))
        #expect(reopened.contains("c"))
        #expect(reopened.count == 2)
    }

    /// A line that cannot be written (a full disk, an immutable file) still leaves the message handled, at its
    /// sequence, in memory: left behind, the sequence made every later message look as if messages before it had
    /// been lost.
    @Test func aLineThatCannotBeWrittenStillCountsInMemory() throws {
        let directory = try TemporaryDirectory()
        let log = try ProcessedNotificationLog.open(directory: directory.url.path)
        try log.record("a", sequence: 1)
        // The journal's own descriptor, pointed at /dev/full: every write to it now fails with ENOSPC.
        let full = open("/dev/full", O_WRONLY | O_CLOEXEC)
        try #require(full >= 0)
        defer { close(full) }
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap(Int32.init)
        let journal = try #require(
            descriptors.first {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == log.path
            })
        try #require(dup2(full, journal) == journal)
        #expect(throws: NodeError.self) { try log.record("b", sequence: 2) }
        #expect(log.contains("b"))
        #expect(log.highestSequence == 2)
    }

    /// The last message's queue sequence survives a reopening and a compaction; a lower one (the queue started
    /// again at the TSP) takes its place, so that losses after it are still found.
    @Test func theLastSequenceSurvivesAndFollowsAQueueThatStartedAgain() throws {
        let directory = try TemporaryDirectory()
        let log = try ProcessedNotificationLog.open(directory: directory.url.path)
        #expect(log.highestSequence == 0)
        try log.record("a", sequence: 10)
        try log.record("b", sequence: 11)
        try log.record("c")
        #expect(log.highestSequence == 11)
        #expect(try ProcessedNotificationLog.open(directory: directory.url.path).highestSequence == 11)
        try log.compact()
        #expect(try ProcessedNotificationLog.open(directory: directory.url.path).highestSequence == 11)
        try log.record("d", sequence: 2)
        #expect(try ProcessedNotificationLog.open(directory: directory.url.path).highestSequence == 2)
    }

    @Test func aLineTornByACrashIsIgnored() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path(ProcessedNotificationLog.fileName)
        try Data("+a\n+b\n-a\n+c".utf8 + [0xFF, 0xFE]).write(to: URL(fileURLWithPath: path))
        let log = try ProcessedNotificationLog(path: path)
        #expect(!log.contains("a"))
        #expect(log.contains("b"))
        #expect(!log.contains("c"))
        try log.record("d")
        #expect(try ProcessedNotificationLog(path: path).contains("d"))
    }

    @Test func idsThatCannotBeOneLineAreNotRecorded() throws {
        let directory = try TemporaryDirectory()
        let log = try ProcessedNotificationLog.open(directory: directory.url.path)
        try log.record("two\nlines")
        try log.record("")
        #expect(log.count == 0)
    }

    @Test func theJournalIsRewrittenWithOnlyLiveIds() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path(ProcessedNotificationLog.fileName)
        let log = try ProcessedNotificationLog(path: path)
        for index in 0..<3000 { try log.record("id-\(index)") }
        log.forget((0..<2999).map { "id-\($0)" })
        // 3000 records and 2999 removals exceed the bound, so the journal now holds the one live id.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text == "+id-2999\n")
        try log.record("after")
        let reopened = try ProcessedNotificationLog(path: path)
        #expect(reopened.contains("id-2999"))
        #expect(reopened.contains("after"))
        #expect(reopened.count == 2)
    }

    @Test func anUnwritableDirectoryIsAClearError() throws {
        let error = #expect(throws: NodeError.self) {
            try ProcessedNotificationLog(path: "/nonexistent-tokenet-directory/journal.log")
        }
        #expect(error?.code == .io, "\(String(describing: error))")
        #expect(
            error?.message == "cannot open /nonexistent-tokenet-directory/journal.log: No such file or directory",
            "\(String(describing: error))")
    }
}
