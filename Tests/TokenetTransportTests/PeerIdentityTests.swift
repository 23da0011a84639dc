import Testing

@testable import TokenetTransport

@Suite struct PeerIdentityTests {
    @Test(arguments: [
        ("tokenet://tsp/tsp-1", PeerRole.tsp, "tsp-1"),
        ("tokenet://issuer/bank.A_2", .issuer, "bank.A_2"),
        ("tokenet://wallet/w", .wallet, "w"),
        ("tokenet://operator/ops-9", .operator, "ops-9"),
    ])
    func parsesValidURIs(uri: String, role: PeerRole, nodeID: String) throws {
        let identity = try PeerIdentity(uri: uri)
        #expect(identity == PeerIdentity(role: role, nodeID: nodeID))
        #expect(identity.uri == uri)
    }

    @Test(arguments: [
        "https://tsp/tsp-1", "tokenet://tsp", "tokenet://tsp/", "tokenet://bank/b-1", "tokenet:///x",
        "tokenet://tsp/a/b", "tokenet://tsp/with space", "tokenet://TSP/tsp-1",
        "tokenet://tsp/" + String(repeating: "x", count: 65),
    ])
    func rejectsMalformedURIs(uri: String) {
        let error = #expect(throws: TransportError.self) { try PeerIdentity(uri: uri) }
        #expect(error?.code == .peerIdentity)
    }

    @Test func unknownRoleMessageNamesTheRole() {
        let error = #expect(throws: TransportError.self) { try PeerIdentity(uri: "tokenet://bank/b-1") }
        #expect(error?.message.contains("unknown role \"bank\"") == true)
    }

    /// A node's own --cert with a role Tokenet does not know said only "unknown role", naming no file.
    @Test func aCertificatesIdentityErrorNamesTheCertificate() {
        let error = #expect(throws: TransportError.self) {
            try PeerIdentity(uriSANs: ["tokenet://bank/b-1"], certificate: "certificate /pki/bank.pem")
        }
        #expect(error?.code == .peerIdentity)
        #expect(error?.message.hasPrefix("certificate /pki/bank.pem: unknown role \"bank\"") == true, "\(error!)")
    }

    @Test func certificateIdentityIgnoresOtherURIsButNeedsExactlyOneTokenetURI() throws {
        #expect(
            try PeerIdentity(uriSANs: ["https://x", "tokenet://tsp/t-1"]) == PeerIdentity(role: .tsp, nodeID: "t-1"))
        #expect(throws: TransportError.self) { try PeerIdentity(uriSANs: []) }
        #expect(throws: TransportError.self) { try PeerIdentity(uriSANs: ["tokenet://tsp/a", "tokenet://tsp/b"]) }
    }
}
