import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `tokenet wallet keys` and `pay` against an in-process wallet: pay says that a key was spent (its output read the
/// same as keys'), counts are singular or plural as they are, and the threshold says what the wallet does at it.
@Suite(.timeLimit(.minutes(3))) struct WalletKeysTextTests {
    private static func run(_ action: String) async throws -> ProcessResult {
        var router = RPCRouter()
        let response = WalletV1.PaymentKeysResponse(
            cardRef: "card-1", digitalCardID: "DNITHE0001", keysRemaining: 1, threshold: 3, batches: 1,
            replenished: false)
        router.unary(WalletV1.WalletLifecycle.paymentKeys) { (_, _) async throws in response }
        router.unary(WalletV1.WalletLifecycle.usePaymentKey) { (_, _) async throws in response }
        let pki = DevelopmentPKI.shared
        return try await runTokenet(
            servedOverTLSBy: router, certificate: pki.path("wallet.pem"), key: pki.path("wallet.key")
        ) {
            [
                "wallet", action, $0, "card-1", "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"),
                "--key", pki.path("operator.key"), "--deadline", "20s",
            ]
        }
    }

    @Test func keysCountsWhatIsLeft() async throws {
        let result = try await Self.run("keys")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout
                == "card-1: 1 payment key left (the wallet fetches a new batch at 3 or fewer; 1 batch so far)\n")
    }

    /// A payment may fetch a batch from the TSP: its trace id, on the last line, finds that in the nodes' logs.
    @Test func paySaysAKeyWasSpent() async throws {
        let result = try await Self.run("pay")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(result.stdout)")
        #expect(
            lines.first
                == "card-1: paid with one payment key; 1 payment key left (the wallet fetches a new batch at 3 or "
                + "fewer; 1 batch so far)")
        #expect(lines.last?.wholeMatch(of: /\(trace [0-9a-f]{15}\)/) != nil, "\(result.stdout)")
    }
}
