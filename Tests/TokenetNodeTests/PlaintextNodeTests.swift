import Testing
import TokenetRPC
import TokenetTestSupport

/// The CLI over mutual TLS to a node started with --plaintext says so and what to add, without OpenSSL's error code.
@Suite(.timeLimit(.minutes(3))) struct PlaintextNodeTests {
    @Test func aPlaintextNodeIsNamedWithWhatToAdd() async throws {
        let pki = DevelopmentPKI.shared
        var address = ""
        let result = try await runTokenet(servedBy: RPCRouter()) {
            address = $0
            return [
                "list", $0, "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"),
            ]
        }
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr
                == "tokenet: cannot connect to \(address): it does not speak TLS; for a node started with "
                + "--plaintext, add --plaintext, otherwise check that \(address) is a Tokenet node's address\n")
    }
}
