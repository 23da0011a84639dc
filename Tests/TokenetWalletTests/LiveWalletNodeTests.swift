import Testing
import TokenetTestSupport

/// A real wallet-node process over mutual TLS, driven by the real `tokenet` CLI as the operator.
@Suite struct LiveWalletNodeTests {
    @Test func theOperatorListsCardsAndAnUnreachableTSPIsReported() async throws {
        let pki = try await offThePool { try TestPKI.directory() }
        // Nothing listens at the TSP's address: the wallet must say so, with the status the channel gave up with.
        let wallet = try await offThePool {
            try NodeProcess("wallet-node", role: "wallet", pki: pki, extra: ["--tsp", try freeLoopbackAddress()])
        }
        let operatorFlags = try TestPKI.operatorFlags()

        let cards = try await runTokenet(["wallet", "cards", wallet.listen] + operatorFlags)
        #expect(cards.status == 0, "\(cards.stderr)")
        #expect(cards.stdout == "The wallet has no cards.\n")

        let add = try await runTokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "4111111111111111", "--exp", "12/30", "--deadline", "20s"]
                + operatorFlags)
        #expect(add.status == 64 + 14, "\(add.stderr)")
        #expect(add.stderr.hasPrefix("ERROR: UNAVAILABLE: the TSP's GetEncryptionKeys failed"), "\(add.stderr)")

        let accept = try await runTokenet(["wallet", "accept-terms", wallet.listen, "card-4"] + operatorFlags)
        #expect(accept.status == 64 + 5)
        #expect(accept.stderr.hasPrefix("ERROR: NOT_FOUND: the wallet has no card card-4\n(trace "), "\(accept.stderr)")
        #expect(!wallet.stderr.contains("4111111111111111"))
    }

    @Test func anIssuerCertificateCannotDriveTheWallet() async throws {
        let pki = try await offThePool { try TestPKI.directory() }
        let wallet = try await offThePool {
            try NodeProcess("wallet-node", role: "wallet", pki: pki, extra: ["--tsp", try freeLoopbackAddress()])
        }
        let result = try await runTokenet(
            [
                "wallet", "cards", wallet.listen, "--cacert", pki + "/ca.pem", "--cert", pki + "/issuer.pem", "--key",
                pki + "/issuer.key",
            ])
        #expect(result.status == 64 + 7, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("ERROR: PERMISSION_DENIED"))
    }
}
