import Foundation
import Testing

@testable import TokenetTSP

@Suite struct TSPKeyFilesTests {
    /// A key file gone from a TSP whose database holds data is said as the node starts: it was made anew without a
    /// word, and the access tokens issued before stopped verifying with nothing in the log to say why.
    @Test func aKeyMissingBesideADatabaseWithDataIsSaid() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-tests-keys-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A first start: no database yet, so nothing is missing.
        #expect(TSPKeyFiles.missingKeyWarnings(dataDirectory: directory).isEmpty)
        _ = try TSPKeyFiles.loadKeyring(dataDirectory: directory)
        _ = try TSPKeyFiles.loadAccessTokenKey(dataDirectory: directory)
        try Data("SQLite format 3\0".utf8).write(to: URL(fileURLWithPath: directory + "/tsp.sqlite"))
        #expect(TSPKeyFiles.missingKeyWarnings(dataDirectory: directory).isEmpty)

        try FileManager.default.removeItem(atPath: directory + "/keys/access-token.key")
        #expect(
            TSPKeyFiles.missingKeyWarnings(dataDirectory: directory) == [
                "\(directory)/keys/access-token.key is missing, though \(directory)/tsp.sqlite holds data: a new key is "
                    + "made in its place, and access tokens issued before no longer verify: cardholders sign in again; "
                    + "stop the node and restore the key from a backup if there is one"
            ])
        try FileManager.default.removeItem(atPath: directory + "/keys/card-key-current.pem")
        #expect(TSPKeyFiles.missingKeyWarnings(dataDirectory: directory).count == 2)
    }
}
