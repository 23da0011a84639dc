import Foundation
import TokenetTransport

/// Where the scratch PKI of this test process lives; a global so the `atexit` handler, which captures nothing, can
/// remove it.
private let scratchRoot = FileManager.default.temporaryDirectory
    .appendingPathComponent("tokenet-test-pki-\(ProcessInfo.processInfo.processIdentifier)")

/// Development certificates made by `Tools/gen-certs`, once per test process, and removed when it exits.
///
/// `directory` holds the CA (`ca.pem`, `ca.key`), the role certificates `tsp`, `issuer`, `wallet` and `operator`
/// (`.pem` and `.key`, each with the URI SAN `tokenet://ROLE/ROLE-1`) and `plain` (signed by the CA, without any
/// tokenet:// URI SAN); `untrusted/` holds another CA with its own role certificates, which the first CA never
/// signed. Every live test of every suite shares it: making the keys is the slow part, and no test changes them.
public struct DevelopmentPKI: Sendable {
    /// The trusted CA and its certificates.
    public let directory: URL

    /// Another CA's certificates, for tests that present one the trusted CA never signed.
    public var untrustedDirectory: URL { directory.appendingPathComponent("untrusted") }

    /// The path of a file of the trusted PKI, such as `ca.pem` or `wallet.key`.
    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The path of a file of the untrusted PKI.
    public func untrustedPath(_ name: String) -> String { untrustedDirectory.appendingPathComponent(name).path }

    /// The PKI of this test process. Live tests cannot run without it, so a `gen-certs` that fails stops the test
    /// process with its output, rather than every test failing later on a missing file.
    public static let shared: DevelopmentPKI = {
        atexit { try? FileManager.default.removeItem(at: scratchRoot) }
        let pki = DevelopmentPKI(directory: scratchRoot)
        run(["--no-uri-san", "plain", pki.directory.path])
        run(["--untrusted", pki.untrustedDirectory.path])
        return pki
    }()

    private static func run(_ arguments: [String]) {
        let script = PackageRoot.url.appendingPathComponent("Tools/gen-certs")
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess(script.path, arguments, standardOutput: .nullDevice, standardError: .pipe)
        } catch {
            fatalError("\(error)")
        }
        // gen-certs writes a few lines at most, far less than a pipe holds, so reading after the exit cannot block it.
        let termination = process.waitUntilExit()
        let messages = String(decoding: process.standardError!.readDataToEndOfFile(), as: UTF8.self)
        if !termination.isCleanExit {
            fatalError("Tools/gen-certs \(arguments.joined(separator: " ")) failed: \(messages)")
        }
    }
}
