import Foundation
import Testing
import TokenetCard
import TokenetStorage
import TokenetWire

@testable import TokenetTSP

/// Payment Account References: one per card account, the same for every token of the card in every wallet, told to
/// the wallet, the issuer and the operator, and given to tokens made before they were kept.
@Suite struct PaymentAccountReferenceTests {
    static func par(_ tsp: TSPHarness, _ id: String) async throws -> String {
        try #require(try await tsp.control.listTokens(.init()).tokens.first { $0.digitalCardID == id })
            .paymentAccountReference
    }

    @Test func everyTokenOfACardSharesOnePAR() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let first = try await SameCardWalletsTests.digitize(tsp, through: tsp.wallet)
        let other = TspV1.Provisioning.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.wallet2))
        let second = try await SameCardWalletsTests.digitize(tsp, through: other)
        #expect(first.digitalCardID != second.digitalCardID)
        let par = first.paymentAccountReference
        #expect(PaymentAccountReference.isWellFormed(par) && par.hasPrefix("V001"), "\(par)")
        #expect(second.paymentAccountReference == par)
        // The operator's listing and the issuer's question carry it too.
        #expect(try await Self.par(tsp, first.digitalCardID) == par)
        #expect(try await Self.par(tsp, second.digitalCardID) == par)
        #expect(tsp.issuer.state.withLock { $0.paymentAccountReferences } == [par, par])

        // Another card has its own, under its scheme's BIN controller.
        let eligibility = try await tsp.checkEligibility(pan: TSPHarness.mastercard)
        let mastercard = try await tsp.digitize(eligibility)
        let own = mastercard.paymentAccountReference
        #expect(PaymentAccountReference.isWellFormed(own) && own.hasPrefix("5001") && own != par, "\(own)")
    }

    @Test func aDeclinedDigitizationGetsNone() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        tsp.issuer.set(.decline("no"))
        let declined = try await tsp.digitize(try await tsp.eligibleVisa())
        #expect(declined.decision == .declined && declined.paymentAccountReference.isEmpty)
    }

    /// Tokens made before PARs were kept get theirs at the next start, a card's tokens one between them.
    @Test func tokensMadeBeforeGetTheirsAtTheNextStart() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let first = try await SameCardWalletsTests.digitize(tsp, through: tsp.wallet)
        let other = TspV1.Provisioning.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.wallet2))
        let second = try await SameCardWalletsTests.digitize(tsp, through: other)
        let mastercard = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        let path = tsp.directory + "/tsp.sqlite"
        let database = try Database.open(path: path)
        // As a database from before PARs were kept holds them: no token's, and no account's numbers.
        #expect(try database.execute("UPDATE tokens SET par = NULL").changes == 3)
        _ = try database.execute("DELETE FROM par_numbers")

        let store = try TSPStore.open(path: path, key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        let pars = try [first, second, mastercard].map {
            try #require(try store.token($0.digitalCardID)?.paymentAccountReference)
        }
        #expect(pars.allSatisfy(PaymentAccountReference.isWellFormed), "\(pars)")
        #expect(pars[0] == pars[1] && pars[2] != pars[0], "\(pars)")
        #expect(pars[0].hasPrefix("V001") && pars[2].hasPrefix("5001"))
        #expect(try store.assignMissingPaymentAccountReferences() == 0)
        #expect(store.paymentAccountReferencesGiven == 3)
    }

    /// A token whose card number cannot be opened (a damaged row) is left without a PAR: the TSP still starts, and
    /// the other cards get theirs.
    @Test func aDamagedTokenRowDoesNotKeepTheTSPFromStarting() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let visa = try await tsp.digitize(try await tsp.eligibleVisa())
        let mastercard = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        let path = tsp.directory + "/tsp.sqlite"
        let database = try Database.open(path: path)
        _ = try database.execute("UPDATE tokens SET par = NULL")
        _ = try database.execute("DELETE FROM par_numbers")
        _ = try database.execute(
            "UPDATE tokens SET funding_pan = x'00' WHERE digital_card_id = ?", [mastercard.digitalCardID])

        let store = try TSPStore.open(path: path, key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        let given = try #require(try store.token(visa.digitalCardID)?.paymentAccountReference)
        #expect(PaymentAccountReference.isWellFormed(given) && given.hasPrefix("V001"))
        #expect(try store.token(mastercard.digitalCardID)?.paymentAccountReference == nil)
    }

    /// The PAR outlives the number: a renewal the TSP applied adds the new number to the account, and a
    /// digitization of the old number that came before the issuer learned of the renewal (its answer lost) gets the
    /// account's PAR too, not a second one.
    @Test func aRenewedAccountKeepsOnePARForItsOldAndNewNumbers() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let first = try await tsp.digitize(try await tsp.eligibleVisa())
        let par = first.paymentAccountReference
        let store = try TSPStore.open(
            path: tsp.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        let renewed = try PAN("4111111111111129")
        let renewal = try store.renewFundingCard(
            [first.digitalCardID], pan: renewed, expiry: nil, actor: "issuer:bank-a", traceID: "t", nowMs: 1,
            authorize: { _ in }, check: { _ in })
        #expect(renewal.value.results.map(\.statusCode) == [0])
        // The old number, digitized again in another wallet: the account's PAR.
        let other = TspV1.Provisioning.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.wallet2))
        let again = try await SameCardWalletsTests.digitize(tsp, through: other)
        #expect(again.paymentAccountReference == par)
        // The new number: the account's PAR as well.
        let known = try store.database.transaction { tx in try store.knownPaymentAccountReference(of: renewed, in: tx) }
        #expect(known == par)
    }

    /// A number the issuer reuses for another card, by renewing that card to it, belongs to that card's account from
    /// then on: a token made of it later gets the renewed card's PAR, not the PAR of the account that had it before.
    @Test func aNumberARenewalReusesJoinsTheRenewedAccount() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        // The Visa number's token in another wallet, so that renewing onto it is no conflict in the first wallet.
        let other = TspV1.Provisioning.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.wallet2))
        let visa = try await SameCardWalletsTests.digitize(tsp, through: other)
        let mastercard = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
        let store = try TSPStore.open(
            path: tsp.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        // The Mastercard account is renewed to a number the Visa account's token held: the test's reuse of one.
        let reused = try PAN(TSPHarness.visa)
        let renewal = try store.renewFundingCard(
            [mastercard.digitalCardID], pan: reused, expiry: nil, actor: "issuer:bank-a", traceID: "t", nowMs: 1,
            authorize: { _ in }, check: { _ in })
        #expect(renewal.value.results.map(\.statusCode) == [0], "\(renewal.value.results)")
        let known = try store.database.transaction { tx in try store.knownPaymentAccountReference(of: reused, in: tx) }
        #expect(known == mastercard.paymentAccountReference && known != visa.paymentAccountReference)
    }

    @Test func theFormIsChecked() {
        #expect(PaymentAccountReference.isWellFormed("V0010013816180398947791728161"))
        #expect(!PaymentAccountReference.isWellFormed("V001001381618039894779172816"))  // 28
        #expect(!PaymentAccountReference.isWellFormed("v0010013816180398947791728161"))  // lower case
        #expect(!PaymentAccountReference.isWellFormed("4111111111111111"))
        let made = Set((0..<100).map { _ in PaymentAccountReference.new(for: .other) })
        #expect(made.count == 100)
        #expect(made.allSatisfy { $0.hasPrefix("T001") && PaymentAccountReference.isWellFormed($0) })
    }
}
