import Synchronization
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `tokenet tsp tokens` against an in-process TSP that holds no tokens for the account asked about: the text says
/// what was asked, since "the TSP has no tokens" was wrong for a TSP that holds other accounts' tokens.
@Suite(.timeLimit(.minutes(3))) struct TSPTokensTextTests {
    /// Runs `tokenet tsp tokens` as the operator with `extra` arguments against a TSP whose listing is empty, and
    /// returns its output with the account the TSP was asked about.
    private static func emptyListing(_ extra: [String]) async throws -> (ProcessResult, TspV1.ListTokensRequest?) {
        let asked = Mutex<TspV1.ListTokensRequest?>(nil)
        var router = RPCRouter()
        router.unary(TspV1.TspControl.listTokens) { (request, _) async throws in
            asked.withLock { $0 = request }
            return TspV1.ListTokensResponse()
        }
        let pki = DevelopmentPKI.shared
        let result = try await runTokenet(servedOverTLSBy: router) {
            [
                "tsp", "tokens", $0, "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"), "--deadline", "20s",
            ] + extra
        }
        return (result, asked.withLock { $0 })
    }

    /// Two wallet nodes may name their accounts and devices alike: the listing says which wallet holds each token,
    /// where two ACTIVE tokens of one card for "the same" account and device read as a broken rule.
    @Test func theListingNamesEachTokensWallet() async throws {
        let token = TspV1.TokenSummary(
            digitalCardID: "DNITHE1", scheme: .visa, panLast4: "0009", tokenLast4: "7667", state: .active,
            issuerID: "tokenet-bank", walletAccountID: "wallet-account-1", deviceID: "device-1")
        var first = token
        first.walletNodeID = "wallet-1"
        var second = token
        second.digitalCardID = "DNITHE2"
        second.walletNodeID = "wallet-2"
        let listing = TspV1.ListTokensResponse(tokens: [first, second, token])
        var router = RPCRouter()
        router.unary(TspV1.TspControl.listTokens) { (_, _) async throws in listing }
        let pki = DevelopmentPKI.shared
        let result = try await runTokenet(servedOverTLSBy: router) {
            [
                "tsp", "tokens", $0, "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"), "--deadline", "20s",
            ]
        }
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 4, "\(result.stdout)")
        guard lines.count == 4 else { return }
        #expect(lines[0].contains("ISSUER        WALLET    WALLET ACCOUNT"), "\(lines[0])")
        #expect(lines[1].contains("tokenet-bank  wallet-1  wallet-account-1"), "\(lines[1])")
        #expect(lines[2].contains("tokenet-bank  wallet-2  wallet-account-1"), "\(lines[2])")
        #expect(lines[3].contains("tokenet-bank  -         wallet-account-1"), "\(lines[3])")
    }

    @Test func anEmptyListingForOneAccountNamesIt() async throws {
        let (result, asked) = try await Self.emptyListing(["--wallet-account", "acct-7"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(asked == TspV1.ListTokensRequest(walletAccountID: "acct-7", pageSize: 1000))
        #expect(result.stdout == "The TSP has no tokens of wallet account acct-7.\n")
    }

    @Test func theFiltersAreAskedForAndNamedWhenNothingMatches() async throws {
        let (result, asked) = try await Self.emptyListing([
            "--issuer", "bank-2", "--state", "Suspended", "--wallet-node", "wallet-9", "--wallet-account", "acct-7",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            asked
                == TspV1.ListTokensRequest(
                    walletAccountID: "acct-7", pageSize: 1000, issuerID: "bank-2", walletNodeID: "wallet-9",
                    state: .suspended))
        #expect(
            result.stdout
                == "The TSP has no tokens of wallet account acct-7, issuer bank-2, wallet node wallet-9, state "
                + "SUSPENDED.\n")
        let (prefixed, _) = try await Self.emptyListing(["--state", "TOKEN_STATE_INACTIVE"])
        #expect(prefixed.stdout == "The TSP has no tokens of state INACTIVE.\n", "\(prefixed.stderr)")
    }

    @Test func aStateThatIsNoTokenStateIsAUsageError() async throws {
        let (result, asked) = try await Self.emptyListing(["--state", "frozen"])
        #expect(result.status == 2)
        #expect(asked == nil)
        #expect(
            result.stderr.contains(
                "--state frozen is not a token state: give inactive, active, suspended, deactivated"),
            "\(result.stderr)")
    }

    @Test func anEmptyListingOfEveryAccountSaysTheTSPHasNone() async throws {
        let (result, asked) = try await Self.emptyListing([])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(asked == TspV1.ListTokensRequest(pageSize: 1000))
        #expect(result.stdout == "The TSP has no tokens.\n")
    }
}
