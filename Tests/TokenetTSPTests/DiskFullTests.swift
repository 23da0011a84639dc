import Testing
import TokenetRPC
import TokenetStorage
import TokenetTestSupport

@testable import TokenetTSP

/// A full disk at the TSP: RESOURCE_EXHAUSTED with what to do, as gRPC has it for a file system out of space, where
/// any other storage failure is INTERNAL without its details.
@Suite struct DiskFullTests {
    /// SQLite's own SQLITE_FULL, from a database held to the size it has.
    static func diskFullError() throws -> StorageError {
        let database = try Database.openInMemory()
        try FullDisk.hold(database)
        do {
            try FullDisk.overfill(database)
        } catch let error as StorageError {
            return error
        }
        throw StorageError(.misuse, "the insert had room after all")
    }

    @Test func aFullDiskIsResourceExhaustedWithWhatToDo() throws {
        let full = try Self.diskFullError()
        #expect(full.code == .full)
        let error = TSPError.internal("RenewCard", full)
        #expect(error.code == .diskFull)
        #expect(error.isFailure, "logged at error level, as an internal failure is")
        #expect(error.rpcError.code == .resourceExhausted)
        #expect(
            error.rpcError.message
                == "the token service could not save its work while RenewCard: its disk is full; free space on the "
                + "disk that holds its data directory, then try again")
        // The log line keeps SQLite's words.
        #expect(error.description.contains("database or disk is full"), "\(error.description)")
    }

    @Test func anyOtherStorageFailureStaysInternal() {
        let error = TSPError.internal("RenewCard", StorageError(.constraint, "UNIQUE constraint failed"))
        #expect(error.code == .internal)
        #expect(error.rpcError.code == .internal)
        #expect(error.rpcError.message == "the token service failed while RenewCard; try again later")
    }

    /// A disk or data directory that refuses writes (an I/O error, a read-only file or mount) is its operator's to
    /// mend: UNAVAILABLE with where to look. INTERNAL read as a fault of the TSP's own.
    @Test func anUnwritableDataDirectoryIsUnavailableWithWhereToLook() throws {
        let database = try Database.openInMemory()
        try database.execute("CREATE TABLE t (x INTEGER)")
        try database.execute("PRAGMA query_only = 1")
        let refused = #expect(throws: StorageError.self) { try database.execute("INSERT INTO t VALUES (1)") }
        let readOnly = try #require(refused)
        #expect(readOnly.code == .readOnly, "\(readOnly)")
        for storage in [readOnly, StorageError(.io, "disk I/O error")] {
            let error = TSPError.internal("RenewCard", storage)
            #expect(error.code == .storageUnavailable)
            #expect(error.isFailure, "logged at error level, as an internal failure is")
            #expect(error.rpcError.code == .unavailable)
            #expect(
                error.rpcError.message
                    == "the token service failed while RenewCard: it cannot use its data directory "
                    + "(\(storage.message)); check the disk that holds it, the directory's and its files' mode and "
                    + "owner (and lsattr), and whether it is mounted read-only, then try again")
        }
    }

    /// A damaged page fails the same way at every retry: DATA_LOSS with the file to restore, not "try again later".
    @Test func aDamagedDatabaseIsDataLossWithWhatToRestore() {
        let error = TSPError.internal("RenewCard", StorageError(.corrupt, "database disk image is malformed"))
        #expect(error.code == .dataLoss)
        #expect(error.isFailure, "logged at error level, as an internal failure is")
        #expect(error.rpcError.code == .dataLoss)
        #expect(
            error.rpcError.message
                == "the token service's database is damaged (found while RenewCard); a retry will not help: stop the "
                + "TSP and restore tsp.sqlite in its data directory from a backup")
        #expect(error.description.contains("database disk image is malformed"), "\(error.description)")
    }

    /// The broker's group commit hands a publisher SQLite's error as it is, so a message the disk has no room for is
    /// a full disk to the caller too; once there is room the next publish goes through.
    @Test func aPublishTheDiskHasNoRoomForIsADiskFull() async throws {
        let harness = try BrokerHarness.make()
        defer { harness.broker.shutDown() }
        try await harness.publish(1)
        try FullDisk.hold(harness.database)
        let large = BrokerHarness.notification(card: "card-1", note: String(repeating: "x", count: 60_000))
        let error = await #expect(throws: TSPError.self) {
            _ = try await harness.broker.publish(large, to: ["wallet/wallet-1"])
        }
        #expect(error?.code == .diskFull, "\(String(describing: error))")
        #expect(error?.rpcError.code == .resourceExhausted)
        try FullDisk.release(harness.database)
        _ = try await harness.broker.publish(large, to: ["wallet/wallet-1"])
    }
}
