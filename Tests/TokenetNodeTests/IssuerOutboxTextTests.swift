import Synchronization
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `tokenet issuer outbox` against an in-process issuer whose outbox holds nothing for what was asked: a listing for
/// one `--digital-card` names that token, since "the outbox is empty" was wrong for an outbox holding other tokens'
/// messages.
@Suite(.timeLimit(.minutes(3))) struct IssuerOutboxTextTests {
    /// Runs `tokenet issuer outbox` with `extra` arguments against an issuer whose listing is empty, and returns its
    /// output with the token the issuer was asked about.
    private static func emptyOutbox(_ extra: [String]) async throws -> (ProcessResult, String?) {
        let asked = Mutex<String?>(nil)
        var router = RPCRouter()
        router.unary(IssuerV1.IssuerCallCentre.outbox) { (request, _) async throws in
            asked.withLock { $0 = request.digitalCardID }
            return IssuerV1.OutboxResponse()
        }
        let pki = DevelopmentPKI.shared
        let result = try await runTokenet(
            servedOverTLSBy: router, certificate: pki.path("issuer.pem"), key: pki.path("issuer.key")
        ) {
            [
                "issuer", "outbox", $0, "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"), "--deadline", "20s",
            ] + extra
        }
        return (result, asked.withLock { $0 })
    }

    @Test func anEmptyListingForOneTokenNamesIt() async throws {
        let (result, asked) = try await Self.emptyOutbox(["--digital-card", "DNITHE0001"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(asked == "DNITHE0001")
        #expect(result.stdout == "The outbox holds no message about DNITHE0001.\n")
    }

    /// What the user typed is echoed masked and on its line: a card number given for the token was printed in
    /// clear, and a line break in it printed a line of its own.
    @Test func anEchoedIdIsMaskedAndKeptOnItsLine() async throws {
        let (result, _) = try await Self.emptyOutbox(["--digital-card", "4761 0000 1000 0009\nfake line"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "The outbox holds no message about **** **** **** 0009\\u{A}fake line.\n")
    }

    @Test func anEmptyOutboxSaysSo() async throws {
        let (result, asked) = try await Self.emptyOutbox([])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(asked == "")
        #expect(result.stdout == "The outbox is empty.\n")
    }
}
