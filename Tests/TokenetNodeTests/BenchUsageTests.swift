import Foundation
import Testing

/// `tokenet-bench` answers a request for help with its usage and status 0, wherever the request stands; it once
/// took `--help` for an unknown option of `run` and failed.
@Suite struct BenchUsageTests {
    @Test(arguments: [["--help"], ["-h"], ["help"], ["server", "--help"], ["compare", "-h"]])
    func helpPrintsTheUsage(arguments: [String]) async throws {
        let result = try await LaunchedProcess.run("tokenet-bench", arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("usage: tokenet-bench [run]"), "\(result.stdout)")
        #expect(result.stderr.isEmpty)
    }

    @Test func anUnknownOptionIsNamed() async throws {
        let result = try await LaunchedProcess.run("tokenet-bench", ["--bogus"])
        #expect(result.status == 2, "a bad option, as for the nodes and the CLI")
        #expect(result.stderr.hasPrefix("tokenet-bench: unknown option --bogus\n"), "\(result.stderr)")
    }
}
