import Foundation
import TokenetTestSupport

/// A fresh directory under the system temporary directory, removed when the value is deinitialized.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tokenet-storage-\(TestScratch.uniqueName())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        // The owner's only, whatever the umask: a test that sets `umask 000` for a moment (the data directory's
        // mode test) ran beside one whose directory came out 0777, and the node refused a key kept there.
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: url.path)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}
