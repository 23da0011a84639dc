import Foundation
import Testing
import TokenetTestSupport

/// "Inspecting a node" in the README shows what `tokenet list` and `describe` print for a tsp-node; a reader who
/// runs them compares, and a service added to the node without the README following looked like a missing one.
extension InspectCommandTests {
    @Test(arguments: [
        ["list"], ["list", "tokenet.health.v1.Health"], ["describe", "tokenet.health.v1.Health.Check"],
    ])
    func theReadmeShowsWhatTheNodeAnswers(command: [String]) async throws {
        let readme = try String(
            contentsOf: PackageRoot.url.appendingPathComponent("README.md"), encoding: .utf8)
        let result = try await runTokenet([command[0], address] + command.dropFirst() + tls)
        #expect(result.status == 0, "\(result.stderr)")
        let shown = (["$ tokenet", command[0], "127.0.0.1:7001"] + command.dropFirst()).joined(separator: " ")
        #expect(
            readme.contains(shown + "\n" + result.stdout + "\n"),
            "README.md does not show what \(shown) prints:\n\(result.stdout)")
    }
}
