import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `tokenet wallet keys` and `pay` against an in-process wallet: pay says that a key was spent (its output read the
/// same as keys'), counts are singular or plural as they are, and the threshold says what the wallet does at it.
@Suite(.timeLimit(.minutes(3))) struct WalletKeysTextTests {
    private static func run(_ action: String, state: CardV1.TokenState = .active, left: UInt32 = 1) async throws
        -> ProcessResult
    {
        var router = RPCRouter()
        let response = WalletV1.PaymentKeysResponse(
            cardRef: "card-1", digitalCardID: "DNITHE0001", keysRemaining: left, threshold: 3, batches: 1,
            replenished: false, tokenState: state)
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

    /// Keys come to an ACTIVE token only: the threshold's promise of a new batch under a deleted or suspended card
    /// promised keys that would not come.
    @Test(arguments: [
        (CardV1.TokenState.deactivated, "the token is DEACTIVATED: it gets no more keys"),
        (.suspended, "the token is SUSPENDED: no batch is fetched until it is resumed"),
    ])
    func keysOfATokenThatIsNotActiveSayWhy(state: CardV1.TokenState, why: String) async throws {
        let result = try await Self.run("keys", state: state, left: 0)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "card-1: 0 payment keys left (\(why); 1 batch so far)\n", "\(result.stdout)")
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
