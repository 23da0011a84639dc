import Foundation
import Testing
import TokenetTestSupport

@testable import TokenetNode

/// A node that could not start on a full disk said "disk I/O error (SQLite result code 4874)" and nothing more.
@Suite struct DiskSpaceTests {
    @Test func aFailedStartWithNextToNoRoomLeftNamesTheFullDisk() {
        #expect(
            DiskSpace.fullDiskNote(dataDirectory: "/data/tsp", available: 40 * 1024)
                == "the disk that holds the data directory /data/tsp is full (40 KiB left): free space on it, then "
                + "start the node again")
        #expect(DiskSpace.fullDiskNote(dataDirectory: "/data/tsp", available: 0)?.contains("(0 bytes left)") == true)
        #expect(DiskSpace.fullDiskNote(dataDirectory: "/data/tsp", available: DiskSpace.nearlyFull) == nil)
    }

    /// A start that failed on a full disk exits 2 with the hint, whether the database's open (a used directory) or
    /// the new vault key's write (a new one) met it first: they exited 1 with the hint and 2 without it.
    @Test func aStartThatFailedOnAFullDiskExits2WithTheHint() {
        let note = DiskSpace.fullDiskNote(dataDirectory: "/data/tsp", available: 0)
        let opening = NodeError(.io, "cannot open the TSP's storage or keys in /data/tsp")
        let newKey = NodeError(
            .config, "cannot write /data/tsp/keys/data-vault.key: No space left on device (errno \(ENOSPC))")
        for error in [opening, newKey] {
            let (hint, status) = NodeMain.failedStart(error, fullDiskNote: note)
            #expect(hint == note && status == 2, "\(error)")
            #expect(NodeMain.failedStart(error, fullDiskNote: nil) == (nil, error.exitStatus))
        }
        let taken = NodeError(.listen, "cannot listen on 127.0.0.1:7001: the address is in use")
        #expect(NodeMain.failedStart(taken, fullDiskNote: note) == (nil, 1))
        // A configuration mistake on a full disk is still the mistake: no hint, its own status.
        let missing = NodeError(.config, "--cert: cannot read /nonexistent.pem: access failed (errno \(ENOENT))")
        #expect(NodeMain.failedStart(missing, fullDiskNote: note) == (nil, 2))
    }

    /// A data directory that does not exist yet is measured where it would be made.
    @Test func aDirectoryNotMadeYetIsMeasuredAtItsNearestAncestor() throws {
        let directory = try TemporaryDirectory()
        let existing = try #require(DiskSpace.available(at: directory.url.path))
        let missing = try #require(DiskSpace.available(at: directory.path("a/b/c")))
        // The same file system, measured moments apart: within a few MiB of each other.
        #expect(max(existing, missing) - min(existing, missing) < 64 << 20)
        #expect(DiskSpace.available(at: "relative/not/made") != nil)
    }
}

/// The connection limits fitted to the file-descriptor limit.
@Suite struct DescriptorBudgetTests {
    @Test func defaultsAreLoweredToFitAndGivenValuesKeptWithAWarning() {
        let defaults = NodeOptions()
        #expect(DescriptorBudget.fit(defaults, limit: 1024).warning == nil)
        #expect(DescriptorBudget.fit(defaults, limit: nil).warning == nil)
        let (fitted, warning) = DescriptorBudget.fit(defaults, limit: 64)
        #expect(fitted.peerConnections == 8 && fitted.addressHandshakes == 8)
        #expect(
            warning
                == "the file-descriptor limit is 64 (ulimit -n): too low for the default connection limits: a peer "
                + "may hold 8 connections (not 64), and an address may have 8 handshakes in progress (not 64), so "
                + "that one peer cannot take every descriptor; raise the limit for more")
        // Never below what a node of the sandbox holds to its peer (a wallet's calls and notification stream).
        #expect(DescriptorBudget.fit(defaults, limit: 20).0.peerConnections == 4)
        #expect(DescriptorBudget.fit(defaults, limit: 40).0.peerConnections == 4)
        var given = defaults
        given.peerConnectionsGiven = true
        given.addressHandshakesGiven = true
        let (kept, keptWarning) = DescriptorBudget.fit(given, limit: 64)
        #expect(kept.peerConnections == 64 && kept.addressHandshakes == 64)
        #expect(keptWarning?.contains("give limits of 8 or fewer") == true, "\(keptWarning ?? "")")
    }

    /// A limit given keeps only itself: the other, left at its default, is still lowered. Both were kept, and with
    /// `--peer-connections 4` under `ulimit -n 64` one address took every descriptor with unfinished handshakes.
    @Test func aLimitGivenKeepsOnlyItself() throws {
        let arguments = ["--peer-connections", "4", "--cert", "c.pem", "--key", "c.key", "--ca", "ca.pem"]
        guard case .run(let options) = try NodeCommandLine.parse(arguments, spec: .tsp) else {
            Issue.record("expected a run command")
            return
        }
        #expect(options.peerConnectionsGiven && !options.addressHandshakesGiven)
        let (fitted, warning) = DescriptorBudget.fit(options, limit: 64)
        #expect(fitted.peerConnections == 4 && fitted.addressHandshakes == 8)
        #expect(warning?.contains("an address may have 8 handshakes in progress (not 64)") == true, "\(warning ?? "")")
        #expect(warning?.contains("--peer-connections") == false, "\(warning ?? "")")
        var many = options
        many.peerConnections = 100
        let (both, bothWarning) = DescriptorBudget.fit(many, limit: 64)
        #expect(both.peerConnections == 100 && both.addressHandshakes == 8)
        #expect(bothWarning?.contains("; and with --peer-connections 100, one peer can take") == true)
    }
}

@Suite struct AddressSpaceLimitTests {
    @Test func aLimitBelowAGibibyteIsNamedAtStart() {
        #expect(AddressSpaceLimit.warning(limit: nil) == nil)
        #expect(AddressSpaceLimit.warning(limit: 2 << 30) == nil)
        #expect(
            AddressSpaceLimit.warning(limit: 400 << 20)
                == "the address-space limit is 400 MiB (ulimit -v): a node may fail when it runs short of memory, "
                + "which it cannot answer with a status (it crashed under 400 MiB); give it at least 1024 MiB")
        // Enough address space, but threads whose stacks take most of it.
        #expect(AddressSpaceLimit.warning(limit: 2 << 30, stack: 8 << 20) == nil)
        #expect(
            AddressSpaceLimit.warning(limit: 1100 << 20, stack: 293 << 20)
                == "the stack limit is 293 MiB (ulimit -s), which every thread reserves: under the address-space limit "
                + "of 1100 MiB (ulimit -v) about 3 threads fit, and a node that cannot start the threads it needs "
                + "hangs; lower ulimit -s (8 MiB is usual) or raise ulimit -v")
    }
}
