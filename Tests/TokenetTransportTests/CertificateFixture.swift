import Foundation
import TokenetTestSupport
import TokenetTransport

/// The shared development PKI (`DevelopmentPKI`) as transport configurations.
///
/// `main` holds the trusted CA, the four role certificates and `plain` (signed by the CA, no tokenet URI SAN);
/// `untrusted` holds a second CA with its own role certificates.
struct CertificateFixture: Sendable {
    let main: URL
    let untrusted: URL

    static let shared = CertificateFixture(
        main: DevelopmentPKI.shared.directory, untrusted: DevelopmentPKI.shared.untrustedDirectory)

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
