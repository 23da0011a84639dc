import Foundation
import TokenetTransport

@testable import TokenetCard

/// Keys and helpers shared by the tests. RSA key generation is slow, so suites share these keys and only
/// rotation tests generate their own.
enum Fixtures {
    static let key = try! RSAPrivateKey.generate()
    static let otherKey = try! RSAPrivateKey.generate()

    static func utc(_ text: String) -> Date {
        ISO8601DateFormatter().date(from: text)!
    }

    /// A Luhn-valid number of `length` digits starting with `prefix` (zeros in between).
    static func pan(prefix: String, length: Int = 16) -> PAN {
        let payload = prefix + String(repeating: "0", count: length - prefix.count - 1)
        return try! PAN(payload + String(Luhn.checkDigit(for: payload)!))
    }

    /// A fresh temporary directory, removed by the caller with `removeItem`.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-card-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Runs an external program with its output captured in files (no pipe buffers to fill).
struct ExternalCommand {
    struct Result {
        let status: Int32
        let stdout: Data
        let stderr: String

        var text: String { String(decoding: stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    static func run(_ arguments: [String], stdin: Data = Data(), in directory: URL) throws -> Result {
        let id = UUID().uuidString
        let input = directory.appendingPathComponent("\(id).in")
        let output = directory.appendingPathComponent("\(id).out")
        let errors = directory.appendingPathComponent("\(id).err")
        try stdin.write(to: input)
        let termination = try SpawnedProcess(
            "/usr/bin/env", arguments, workingDirectory: directory.path, standardInput: .file(input.path),
            standardOutput: .file(output.path), standardError: .file(errors.path)
        ).waitUntilExit(killingAfter: 120)
        return Result(
            status: termination.status,
            stdout: try Data(contentsOf: output),
            stderr: String(decoding: try Data(contentsOf: errors), as: UTF8.self)
        )
    }
}
