import Testing
import TokenetTestSupport

/// `tokenet issuer renew-card --exp` is checked as `wallet add-card --exp` is, before the issuer is asked: the
/// issuer's own refusal came back as INVALID_ARGUMENT (status 67) for what is the command line's mistake.
@Suite struct RenewCardExpiryTests {
    @Test(arguments: ["12/2031", "13/31", "1231", "12/3"])
    func aMalformedExpiryIsRefusedBeforeTheIssuerIsAsked(expiry: String) async throws {
        let listener = try LoopbackSocket.ListeningPort()
        let result = try await runTokenet([
            "issuer", "renew-card", "127.0.0.1:\(listener.port)", "card-1", "--exp", expiry, "--plaintext",
        ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tokenet: issuer renew-card: "), "\(result.stderr)")
        #expect(result.stderr.contains("MM/YY") || result.stderr.contains("month"), "\(result.stderr)")
        #expect(!listener.hasPendingConnection, "the command connected")
    }
}
