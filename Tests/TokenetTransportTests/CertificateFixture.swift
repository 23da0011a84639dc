import Foundation
import TokenetTransport

/// One directory per test process, removed when the process exits.
private let fixtureRoot = FileManager.default.temporaryDirectory
    .appendingPathComponent("tokenet-transport-certs-\(ProcessInfo.processInfo.processIdentifier)")

/// Development certificates made by Tools/gen-certs in a temporary directory, once per test process.
///
/// `main` holds the trusted CA, the four role certificates and `plain` (signed by the CA, no tokenet URI SAN);
/// `untrusted` holds a second CA with its own role certificates.
struct CertificateFixture: Sendable {
    let main: URL
    let untrusted: URL

    static let shared: CertificateFixture = {
        let root = fixtureRoot
        atexit { try? FileManager.default.removeItem(at: fixtureRoot) }
        let main = root.appendingPathComponent("trusted")
        let untrusted = root.appendingPathComponent("untrusted")
        run(["--no-uri-san", "plain", main.path])
        run(["--untrusted", untrusted.path])
        return CertificateFixture(main: main, untrusted: untrusted)
    }()

    static var genCerts: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tools/gen-certs")
    }

    private static func run(_ arguments: [String]) {
        let process = Process()
        process.executableURL = genCerts
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()
        } catch {
            fatalError("cannot run \(genCerts.path): \(error)")
        }
        precondition(process.terminationStatus == 0, "gen-certs \(arguments) failed")
    }

    func path(_ name: String, untrusted: Bool = false) -> String {
        (untrusted ? self.untrusted : main).appendingPathComponent(name).path
    }

    var caFile: String { path("ca.pem") }

    func server(_ name: String = "tsp", roles: Set<PeerRole> = Set(PeerRole.allCases)) -> TLSConfiguration {
        .server(
            certificateChainFile: path("\(name).pem"), privateKeyFile: path("\(name).key"), trustedCAFile: caFile,
            acceptedPeerRoles: roles)
    }

    func client(_ name: String? = "wallet", untrusted: Bool = false) -> TLSConfiguration {
        .client(
            certificateChainFile: name.map { path("\($0).pem", untrusted: untrusted) },
            privateKeyFile: name.map { path("\($0).key", untrusted: untrusted) },
            trustedCAFile: caFile)
    }

    func context(_ configuration: TLSConfiguration) throws -> TLSContext {
        try TLSContext(configuration: configuration, keyLogFile: nil)
    }
}
