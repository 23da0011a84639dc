import Foundation
import Testing
@testable import TokenetTransport

/// `TLSContext.checkOwnCertificate`: what a client can find wrong with its certificate before a server refuses it.
@Suite struct OwnCertificateTests {
    let certs = CertificateFixture.shared

    @Test func aValidCertificateNamesItsIdentity() throws {
        let context = try certs.context(certs.client("operator"))
        #expect(try context.checkOwnCertificate() == PeerIdentity(role: .operator, nodeID: "operator-1"))
    }

    /// Tools/gen-certs makes certificates valid for 825 days from now.
    @Test func anExpiredCertificateIsNamedWithItsEndDate() throws {
        let context = try certs.context(certs.client("operator"))
        let later = Date(timeIntervalSinceNow: 900 * 86_400)
        let error = #expect(throws: TransportError.self) { try context.checkOwnCertificate(at: later) }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("operator.pem expired on ") == true, "\(String(describing: error))")
    }

    @Test func aCertificateNotYetValidIsNamedWithItsStartDate() throws {
        let context = try certs.context(certs.client("operator"))
        let earlier = Date(timeIntervalSinceNow: -86_400)
        let error = #expect(throws: TransportError.self) { try context.checkOwnCertificate(at: earlier) }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("operator.pem is not valid before ") == true, "\(String(describing: error))")
    }

    @Test func aCertificateWithoutATokenetIdentityIsRefused() throws {
        let context = try certs.context(certs.client("plain"))
        let error = #expect(throws: TransportError.self) { try context.checkOwnCertificate() }
        #expect(error?.code == .peerIdentity)
        #expect(error?.message.contains("plain.pem has no tokenet://ROLE/ID") == true, "\(String(describing: error))")
    }

    /// The server side of the same refusal, in memory: the client's first read after its handshake names the alert.
    @Test func aClientLearnsWhyTheServerRefusedItsCertificate() throws {
        let pair = try EnginePair(client: certs.client("wallet", untrusted: true), server: certs.server())
        #expect(throws: TransportError.self) { try pair.handshake() }
        pair.shuttle()
        let error = #expect(throws: TransportError.self) { try pair.client.readPlaintext() }
        #expect(error?.code == .certificateRefused)
        #expect(error?.message == "the server refused this client's certificate (unknown CA)")
    }
}
