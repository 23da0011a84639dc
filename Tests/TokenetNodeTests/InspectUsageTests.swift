import Foundation
import Testing

/// Runs `tokenet list`, `describe` and `call` with input they must refuse before reaching any node: each ends with
/// exit status 2 and a message that says what to change.
@Suite struct InspectUsageTests {
    /// A node address nothing listens on; none of these commands may get as far as connecting.
    let address = "127.0.0.1:1"

    /// A directory as standard input makes read(2) fail; the command reports why instead of trapping.
    @Test func unreadableStandardInputIsAUsageError() throws {
        let directory = open("/", O_RDONLY | O_DIRECTORY)
        try #require(directory >= 0)
        let result = try runTokenet(
            ["call", address, "tokenet.health.v1.Health/Check", "-d", "@", "--plaintext"],
            standardInput: FileHandle(fileDescriptor: directory, closeOnDealloc: true))
        #expect(result.reason == .exit)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("cannot read standard input: Is a directory"), "\(result.stderr)")
    }
}
