import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetStorage
import TokenetTestSupport
import TokenetWire

@testable import TokenetIssuer
@testable import TokenetRPC

/// The issuer backend's enrolment and the issuer app's activation, PIN and login, against a fake TSP.
@Suite struct IssuerAppAuthTests {
    struct App {
        let party: IssuerParty
        let tsp: FakeTSPAuth
        let logs: MemoryLogSink

        static func make(
            store: IssuerStore? = nil, tsp: FakeTSPAuth = FakeTSPAuth(), iterations: Int = 1000,
            link: ((any RPCCaller) -> any RPCCaller)? = nil
        ) throws -> App {
            let logs = MemoryLogSink()
            let caller: any RPCCaller = Support.connect(tsp.router, as: .issuer)
            let party = IssuerParty(
                store: try store ?? Support.store(), key: try Support.issuerKey(),
                tsp: link?(caller) ?? caller, wallet: nil, logger: Support.logger(logs),
                registrationTimeout: nil, appKeyIterations: iterations, now: { Support.now })
            return App(party: party, tsp: tsp, logs: logs)
        }

        /// Enrols an account and reads the code and reference from the outbox, as the cardholder would.
        func enrol(_ user: String = "ch-alice", _ account: String = "acc-alice-checking") async throws -> (
            code: String, reference: String, text: String
        ) {
            let response = try await party.enrolment.enroll(userID: user, accountID: account)
            let message = try #require(
                try party.store.outbox(digitalCardID: "enrolment:\(response.referenceID)").first)
            let code = try #require(message.text.split(separator: " ").dropFirst(7).first.map(String.init))
            return (code, response.referenceID, message.text)
        }
    }

    /// A TSP failure passed on names the TSP's status as the wire does (DATA_LOSS), not by its Swift case name
    /// (dataLoss).
    @Test func aTSPFailureNamesItsStatus() async {
        do {
            _ = try await IssuerEnrolmentBackend.calling("log in") { () async throws -> Int in
                throw RPCError(.dataLoss, "its database is damaged")
            }
            Issue.record("the call succeeded")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message == "cannot log in at the TSP (DATA_LOSS): its database is damaged")
        }
    }

    /// A call whose deadline passed while it was connecting never reached the TSP: UNAVAILABLE, with no "may have
    /// done so" (the login that made it gives its counters back for that reason).
    @Test func aCallThatNeverLeftIsNotSaidToHaveBeenDone() async {
        do {
            _ = try await IssuerEnrolmentBackend.calling("log in", ifUnanswered: "log in again") {
                () async throws -> Int in
                throw RPCError(
                    .deadlineExceeded, "the deadline passed while connecting",
                    cause: NotConnected(reason: "the deadline passed while connecting"))
            }
            Issue.record("the call succeeded")
        } catch {
            #expect(error.code == .unavailable)
            #expect(!error.message.contains("may have done so"), "\(error.message)")
        }
    }

    /// A TSP that did not answer in time may have done what was asked: DEADLINE_EXCEEDED, which says so, with what
    /// to do when the call says it; it read as UNAVAILABLE, a TSP that was down, though the TSP had registered an
    /// enrolment whose code nobody got.
    @Test func aTSPThatDidNotAnswerInTimeMayHaveDoneIt() async {
        for advice in [nil, "run the command again"] {
            do {
                _ = try await IssuerEnrolmentBackend.calling("enrol the account", ifUnanswered: advice) {
                    () async throws -> Int in
                    throw RPCError(.deadlineExceeded, "the call did not finish within its deadline (390 ms)")
                }
                Issue.record("the call succeeded")
            } catch {
                #expect(error.code == .tspDidNotAnswer && error.rpcError.code == .deadlineExceeded)
                #expect(
                    error.message
                        == "the TSP did not answer in time to enrol the account (the call did not finish within its "
                        + "deadline (390 ms)); it may have done so all the same" + (advice.map { ": \($0)" } ?? ""))
            }
        }
    }

    /// A TSP out of a resource (its disk full, a limit on calls) stays RESOURCE_EXHAUSTED for the operator, with
    /// the TSP's words on what to free, rather than the UNAVAILABLE of a TSP that cannot be reached.
    @Test func anExhaustedTSPStaysResourceExhausted() async {
        do {
            _ = try await IssuerEnrolmentBackend.calling("enrol the account") { () async throws -> Int in
                throw RPCError(.resourceExhausted, "its disk is full; free space on the disk, then try again")
            }
            Issue.record("the call succeeded")
        } catch {
            #expect(error.code == .tspExhausted)
            #expect(error.rpcError.code == .resourceExhausted)
            #expect(
                error.rpcError.message
                    == "the TSP cannot enrol the account now: its disk is full; free space on the disk, then try again")
        }
    }

    @Test(arguments: ["1234", "1111", "4321", "0000", "7890", "98765", "12", "123456789", "12a4", ""])
    func pinPolicyRefusesTrivialOrMalformedPINs(_ pin: String) {
        #expect(throws: IssuerError.self) { try PINPolicy.check(pin) }
    }

    /// The patterns guessed right after runs and repeats, each named: they were accepted as first PINs.
    @Test(arguments: [
        ("2468", "is digits an even step apart"), ("1357", "is digits an even step apart"),
        ("9630", "is digits an even step apart"), ("1212", "repeats a block of digits"),
        ("123123", "repeats a block of digits"), ("10101010", "repeats a block of digits"),
        ("12121", "repeats a block of digits"), ("12312312", "repeats a block of digits"),
        ("1122", "doubles each of its digits"), ("112233", "doubles each of its digits"),
    ])
    func pinPolicyRefusesPatterns(_ pin: String, _ pattern: String) {
        let error = #expect(throws: IssuerError.self) { try PINPolicy.check(pin) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message == "the PIN \(pattern); choose one that is harder to guess")
    }

    @Test(arguments: ["2580", "1470", "24681357", "25803691", "14703692", "90210", "31415926", "1123", "12312", "1213"])
    func pinPolicyAcceptsOtherPINs(_ pin: String) throws {
        try PINPolicy.check(pin)
    }

    /// The code's message names the issuer whose app it activates, from its fixture: every issuer's said "Tokenet
    /// Bank".
    @Test func theCodesMessageNamesTheIssuersOwnBank() async throws {
        let store = try IssuerStore(
            database: try Database.openInMemory(), vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        var fixture = try Support.fixture()
        fixture.issuer.name = "Second Bank"
        try store.importFixture(fixture)
        let (_, _, text) = try await App.make(store: store).enrol()
        #expect(text.hasPrefix("Your Second Bank app activation code is CODE1XYZ"), "\(text)")
    }

    /// The message says how long the code lasts as the one-time codes' messages do, never longer than it does: a
    /// TSP whose codes last 10 s said "it expires in 1 minute", and one of 90 s "2 minutes".
    @Test(arguments: [
        (10_000, "10 seconds"), (90_000, "90 seconds"), (150_000, "2 minutes"), (3_599_000, "59 minutes"),
        (3_600_000, "60 minutes"),
    ])
    func theCodesMessageSaysHowLongItLasts(_ lifetimeMs: UInt64, _ said: String) async throws {
        let tsp = FakeTSPAuth()
        tsp.state.withLock { $0.activationLifetimeMs = lifetimeMs }
        let (_, _, text) = try await App.make(tsp: tsp).enrol()
        #expect(text.contains("); it expires in \(said). Or open "), "\(text)")
    }

    @Test func enrolmentDeliversTheCodeAndAnOTPLink() async throws {
        let app = try App.make()
        let (code, reference, text) = try await app.enrol()
        #expect(code == "CODE1XYZ")
        #expect(reference == "ref-1")
        #expect(text.contains("otp://p?u=tokenet%3A%2F%2Ftsp&n=ch-alice&c=CODE1XYZ&r=ref-1. "))
        await #expect(throws: IssuerError.self) {
            _ = try await app.party.enrolment.enroll(userID: "ch-alice", accountID: "acc-bob-checking")
        }
        #expect(!app.logs.lines.joined().contains(code))
    }

    @Test func firstAccountSetsThePINAndLaterAccountsNeedIt() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        // A trivial PIN is refused before the code reaches the TSP, so the code stays usable.
        await expectIssuerError(.invalidArgument, "run of digits") {
            try await app.party.app.activate(
                code: first.code, referenceID: first.reference, displayName: "", pin: "1234")
        }
        #expect(app.tsp.state.withLock { $0.verifyCalls } == 0)
        let wrongCode = try await app.party.app.activate(
            code: "NOPE", referenceID: first.reference, displayName: "Checking", pin: "2580")
        #expect(wrongCode.result == .incorrectCode && !wrongCode.pinSet)
        #expect(try app.party.app.accounts(userID: "ch-alice").pinSet == false)
        let activated = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "Checking", pin: "2580")
        #expect(activated.result == .success && activated.pinSet)
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.map(\.displayName) == ["Checking"])

        let second = try await app.enrol("ch-alice", "acc-alice-credit")
        await expectIssuerError(.unauthenticated, "enter the app's PIN") {
            try await app.party.app.activate(code: second.code, referenceID: second.reference, displayName: "", pin: "")
        }
        await expectIssuerError(.unauthenticated, "not correct") {
            try await app.party.app.activate(
                code: second.code, referenceID: second.reference, displayName: "", pin: "1357")
        }
        let again = try await app.party.app.activate(
            code: second.code, referenceID: second.reference, displayName: "Credit", pin: "2580")
        #expect(again.result == .success && !again.pinSet)
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.count == 2)
        let reused = try await app.party.app.activate(
            code: second.code, referenceID: second.reference, displayName: "Credit", pin: "2580")
        #expect(reused.result == .alreadyUsed)
    }

    /// An account the app holds, enrolled and activated again by a code whose answer was lost: the TSP's new
    /// credentials revoked the app's, so the retry's ALREADY_USED means the account cannot log in. It said "the
    /// account is activated" and the app kept listing it; it is now removed from the app, and the message says why.
    /// A retry of the code whose credentials the app holds still says the account is activated.
    @Test func aCodeUsedByALostReactivationRemovesTheAccountItReplaced() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        let activated = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "Checking", pin: "2580")
        #expect(activated.result == .success)
        let retried = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "Checking", pin: "2580")
        #expect(retried.result == .alreadyUsed && !retried.message.contains("never received"), "\(retried)")
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.count == 1)

        let second = try await app.enrol()
        app.tsp.state.withLock { $0.enrolments[second.reference]?.used = true }
        let lost = try await app.party.app.activate(
            code: second.code, referenceID: second.reference, displayName: "Checking", pin: "2580")
        #expect(lost.result == .alreadyUsed)
        #expect(
            lost.message
                == "the activation code was already used, but the app never received the credentials it gave account "
                + "acc-alice-checking (the answer was lost), and they replaced the ones the app held, which no longer "
                + "work: the account is removed from the app; ask the issuer to enrol it again for a new code")
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.isEmpty)

        let third = try await app.enrol()
        let again = try await app.party.app.activate(
            code: third.code, referenceID: third.reference, displayName: "Checking", pin: "2580")
        #expect(again.result == .success)
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.count == 1)
    }

    /// An old code opened again after a newer one activated the account: it was used before the app's credentials
    /// were issued, so they stand, and the account stays (it was removed, as if a lost activation had replaced them).
    @Test func anOlderUsedCodeLeavesTheAccountItsNewerCredentials() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        #expect(
            try await app.party.app.activate(
                code: first.code, referenceID: first.reference, displayName: "Checking", pin: "2580"
            ).result == .success)
        let second = try await app.enrol()
        #expect(
            try await app.party.app.activate(
                code: second.code, referenceID: second.reference, displayName: "Checking", pin: "2580"
            ).result == .success)
        let old = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "Checking", pin: "2580")
        #expect(old.result == .alreadyUsed)
        #expect(
            old.message
                == "the activation code was already used, and account acc-alice-checking is activated in the app with "
                + "a newer one: this code is not needed")
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.count == 1)
    }

    /// An app with ch-alice's checking account activated as "Checking", and a second enrolment of that account not
    /// yet used.
    static func activatedAndEnrolledAgain() async throws -> (App, (code: String, reference: String)) {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "Checking", pin: "2580")
        let second = try await app.enrol()
        return (app, (second.code, second.reference))
    }

    /// Runs `first` until it reaches `gate`, then starts `second`, lets 200 ms pass (a `second` that does not wait for
    /// its turn runs then), opens the gate and returns what each returned.
    static func secondWhileFirstHeld<A: Sendable, B: Sendable>(
        at gate: Gate, _ first: @escaping @Sendable () async throws -> A,
        then second: @escaping @Sendable () async throws -> B
    ) async throws -> (A, B) {
        let held = Task { try await first() }
        try await gate.arrived(1)
        let waiting = Task { try await second() }
        try await Task.sleep(for: .milliseconds(200))
        gate.open()
        return (try await held.value, try await waiting.value)
    }

    /// A retry of a code while its first try is still under way (a client that gave up waiting) waits for it: it read
    /// the account before the first saved the new credentials, took the first's ALREADY_USED for a lost activation,
    /// and removed the account the first then filled with working credentials.
    @Test func aRetryDuringItsFirstTryWaitsForIt() async throws {
        let (app, second) = try await Self.activatedAndEnrolledAgain()
        let gate = Gate()
        app.tsp.state.withLock { $0.holdNextActivation = gate }
        let authenticator = app.party.app
        let activate = { @Sendable in
            try await authenticator.activate(
                code: second.code, referenceID: second.reference, displayName: "Checking", pin: "2580")
        }
        // The retry waits for its turn; were it to reach the TSP while the first is held, it would be answered at once.
        let (slow, retried) = try await Self.secondWhileFirstHeld(at: gate, activate, then: activate)
        #expect(slow.result == .success)
        #expect(retried.result == .alreadyUsed)
        #expect(!retried.message.contains("removed"), "\(retried.message)")
        let accounts = try app.party.store.appAccounts("ch-alice")
        #expect(accounts.map(\.referenceID) == [second.reference])
    }

    /// The TSP activated the account but its answer, with the credentials, never reached the app: trying the code
    /// again is ALREADY_USED, and the app says the credentials were lost and how to get new ones instead of "the
    /// account is activated", which sent the cardholder to a login that fails. A new enrolment activates it.
    @Test func aCodeUsedByAnActivationWhoseAnswerWasLostSaysToEnrolAgain() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        app.tsp.state.withLock { $0.enrolments[first.reference]?.used = true }
        let lost = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "Checking", pin: "2580")
        #expect(lost.result == .alreadyUsed)
        #expect(lost.message.contains("never received the credentials of account acc-alice-checking"), "\(lost)")
        #expect(lost.message.contains("enrol the account again"))
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.isEmpty)

        let again = try await app.enrol()
        let activated = try await app.party.app.activate(
            code: again.code, referenceID: again.reference, displayName: "Checking", pin: "2580")
        #expect(activated.result == .success)
    }

    /// An account activate-linked activated keeps its first enrolment's code, which the TSP then reports expired
    /// (replaced): the app says the account is already in it, not to ask the issuer for a new code.
    @Test func anExpiredCodeOfAnAccountAlreadyInTheAppSaysSo() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        let again = try await app.enrol()
        app.tsp.state.withLock { _ = $0.expiring.insert(again.reference) }
        let answer = try await app.party.app.activate(
            code: again.code, referenceID: again.reference, displayName: "", pin: "2580")
        #expect(answer.result == .expiredCode)
        // No newer enrolment: the code expired, and is not said to be replaced (it was, with none to replace it).
        #expect(
            answer.message
                == "account acc-alice-checking is already activated in the app, so this code, expired, is not needed")
        _ = try await app.enrol()
        let replaced = try await app.party.app.activate(
            code: again.code, referenceID: again.reference, displayName: "", pin: "2580")
        #expect(
            replaced.message
                == "account acc-alice-checking is already activated in the app, so this code, since replaced, is not "
                + "needed")
        // For an account not in the app, the TSP's words stand.
        let other = try await app.enrol("ch-alice", "acc-alice-credit")
        app.tsp.state.withLock { _ = $0.expiring.insert(other.reference) }
        let expired = try await app.party.app.activate(
            code: other.code, referenceID: other.reference, displayName: "", pin: "2580")
        #expect(expired.result == .expiredCode && expired.message.contains("ask the issuer for a new code"))
    }

    /// The message's link carried no reference id, so the app could not use it, and pasting it as the code used
    /// one of the activation's tries. The link now carries the reference and the app opens it; what cannot be a
    /// code, or a name the app cannot show, is refused before the TSP counts a try.
    @Test func theMessagesLinkActivatesAndWhatIsNotACodeUsesNoTry() async throws {
        let app = try App.make()
        let (code, reference, text) = try await app.enrol()
        let link = try #require(text.firstMatch(of: #/(otp://\S+)\. /#)?.output.1).description
        let activate = { (code: String, reference: String, link: String) async throws in
            try await app.party.app.activate(
                code: code, referenceID: reference, displayName: "", pin: "2580", link: link)
        }
        await expectIssuerError(.invalidArgument, "this is the activation link, not the code") {
            try await activate(link, reference, "")
        }
        await expectIssuerError(.invalidArgument, "only letters and digits") {
            try await activate("CODE1XYZ!", reference, "")
        }
        await expectIssuerError(.invalidArgument, "has no reference id (r=)") {
            try await activate("", "", link.replacingOccurrences(of: "&r=\(reference)", with: ""))
        }
        await expectIssuerError(.invalidArgument, "not an activation link") {
            try await activate("", "", "https://x/y")
        }
        await expectIssuerError(.invalidArgument, "differs from the link's") {
            try await activate("CODE9XYZ", "", link)
        }
        await expectIssuerError(.invalidArgument, "names user ch-bob, but reference \(reference) is ch-alice's") {
            try await activate("", "", link.replacingOccurrences(of: "n=ch-alice", with: "n=ch-bob"))
        }
        await expectIssuerError(.invalidArgument, "the account's name has 65 characters; at most 64") {
            try await app.party.app.activate(
                code: code, referenceID: reference, displayName: String(repeating: "n", count: 65), pin: "2580")
        }
        await expectIssuerError(.invalidArgument, "control character") {
            try await app.party.app.activate(
                code: code, referenceID: reference, displayName: "Checking\u{1B}[2J", pin: "2580")
        }
        // Kept in the clear and listed: a card number there is refused, and not echoed.
        await expectIssuerError(
            .invalidArgument, "the account's name holds a card number ('My card **** **** **** 0009')"
        ) {
            try await app.party.app.activate(
                code: code, referenceID: reference, displayName: "My card 4761 0000 1000 0009", pin: "2580")
        }
        #expect(app.tsp.state.withLock { $0.verifyCalls } == 0)
        let activated = try await activate(code.lowercased(), "", link)
        #expect(activated.result == .success && activated.accountID == "acc-alice-checking")
        #expect(app.tsp.state.withLock { $0.verifyCalls } == 1)
    }

    @Test func anActivationLinkReadsBackWhatItCarries() throws {
        let link = ActivationLink(
            serverURL: "tokenet://tsp:7443/a?b=c&d", userID: "ch-al ice", code: "AB23-CD45", referenceID: "ref-x_Y")
        #expect(link.text == "otp://p?u=tokenet%3A%2F%2Ftsp%3A7443%2Fa%3Fb%3Dc%26d&n=ch-al%20ice&c=AB23-CD45&r=ref-x_Y")
        #expect(try ActivationLink(parsing: " \(link.text)\n") == link)
        // Copied with the message's full stop after it.
        #expect(try ActivationLink(parsing: "\(link.text).") == link)
        #expect(throws: IssuerError.self) { try ActivationLink(parsing: link.text + "&c=AAAA") }
        #expect(throws: IssuerError.self) { try ActivationLink(parsing: "otp://q?c=A&r=B") }
        // A code whose %-escapes are not UTF-8 is named as such: it was said to be missing.
        let notText = #expect(throws: IssuerError.self) { try ActivationLink(parsing: "otp://p?c=%FF&r=ref-1") }
        #expect(notText?.message.contains("c= is not text (its %-escapes are not UTF-8)") == true)
    }

    @Test func thePINSurvivesDeletingEveryAccount() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        #expect(
            try await app.party.app.deleteAccount(userID: "ch-alice", accountID: "acc-alice-checking", pin: "2580")
                == 0)
        #expect(try app.party.app.accounts(userID: "ch-alice").pinSet)
        let again = try await app.enrol()
        await expectIssuerError(.unauthenticated, "not correct") {
            try await app.party.app.activate(
                code: again.code, referenceID: again.reference, displayName: "", pin: "1470")
        }
        #expect(
            try await app.party.app.activate(
                code: again.code, referenceID: again.reference, displayName: "", pin: "2580"
            )
            .result == .success)
    }

    /// Removing an account forgot its credentials in the app only: the TSP kept them, so the access tokens they had
    /// signed in still activated the account's cards. The TSP now revokes them first, and the signed-in user (the PIN)
    /// is the one who may remove an account.
    @Test func deletingAnAccountRevokesItsCredentialsAtTheTSPFirst() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        let credentials = ["uc-\(first.reference)", "dc-\(first.reference)"]
        app.tsp.state.withLock { $0.removeDown = true }
        await expectIssuerError(.unavailable, "account acc-alice-checking stays in the app, remove it again") {
            _ = try await app.party.app.deleteAccount(userID: "ch-alice", accountID: "acc-alice-checking", pin: "2580")
        }
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.count == 1)
        app.tsp.state.withLock { $0.removeDown = false }
        await expectIssuerError(.unauthenticated, "enter the app's PIN") {
            _ = try await app.party.app.deleteAccount(userID: "ch-alice", accountID: "acc-alice-checking", pin: "")
        }
        await expectIssuerError(.unauthenticated, "4 tries left") {
            _ = try await app.party.app.deleteAccount(userID: "ch-alice", accountID: "acc-alice-checking", pin: "9999")
        }
        await expectIssuerError(.notFound, "account acc-alice-savings is not activated in ch-alice's app") {
            _ = try await app.party.app.deleteAccount(userID: "ch-alice", accountID: "acc-alice-savings", pin: "2580")
        }
        // A user the issuer does not have is named so, not as one whose app is not activated yet.
        await expectIssuerError(.notFound, "the issuer has no user \"ch-nobody\"") {
            _ = try await app.party.app.deleteAccount(userID: "ch-nobody", accountID: "acc-alice-checking", pin: "2580")
        }
        await expectIssuerError(.notFound, "the issuer has no user \"ch-nobody\"") {
            _ = try await app.party.app.login(userID: "ch-nobody", pin: "2580")
        }
        #expect(app.tsp.state.withLock { state in credentials.allSatisfy { state.secrets[$0] != nil } })
        #expect(
            try await app.party.app.deleteAccount(userID: "ch-alice", accountID: "acc-alice-checking", pin: "2580")
                == 0)
        #expect(app.tsp.state.withLock { state in credentials.allSatisfy { state.secrets[$0] == nil } })
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.isEmpty)
    }

    /// An activation of an account while the app removes it waits for the removal: it saved its new credentials
    /// while the TSP revoked the old ones, and the removal then deleted the new ones from the app, leaving them live
    /// at the TSP with no app to use or revoke them.
    @Test func anActivationDuringARemovalWaitsForIt() async throws {
        let (app, second) = try await Self.activatedAndEnrolledAgain()
        let gate = Gate()
        app.tsp.state.withLock { $0.holdNextRemoval = gate }
        let authenticator = app.party.app
        // The activation waits for its turn; were it to run while the removal is held, it would save its
        // credentials before the removal ends.
        let (left, activated) = try await Self.secondWhileFirstHeld(
            at: gate,
            { try await authenticator.deleteAccount(userID: "ch-alice", accountID: "acc-alice-checking", pin: "2580") },
            then: {
                try await authenticator.activate(
                    code: second.code, referenceID: second.reference, displayName: "Checking", pin: "2580")
            })
        #expect(left == 0)
        #expect(activated.result == .success)
        let accounts = try app.party.store.appAccounts("ch-alice")
        #expect(accounts.map(\.referenceID) == [second.reference])
        let live = app.tsp.state.withLock { Set($0.secrets.keys) }
        #expect(live == ["uc-\(second.reference)", "dc-\(second.reference)"])
    }

    /// Two logins of one user at once take turns: the second took the next counter, reached the TSP first, and the
    /// first was then refused as a wrong code (counted towards the lock) though its PIN was right.
    @Test func loginsOfOneUserAtOnceTakeTurns() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        app.tsp.state.withLock { $0.holdFirstLogin = true }
        let results = await withTaskGroup(of: String.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    do {
                        return try await app.party.app.login(userID: "ch-alice", pin: "2580").accessToken.isEmpty
                            ? "empty" : "ok"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == ["ok", "ok"], "\(results)")
        #expect(app.tsp.state.withLock { $0.overtaking } == 0)
    }

    /// PIN checks of one user take turns: guesses made at once were each checked against the count before any of
    /// them, and 6 of 20 were checked, past the limit of 5.
    @Test func pinGuessesAtOnceAreCheckedAgainstTheLimit() async throws {
        // The deployed key derivation: its time is the window the guesses raced in.
        let app = try App.make(iterations: 100_000)
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<20 {
                group.addTask {
                    do {
                        _ = try await app.party.app.deleteAccount(
                            userID: "ch-alice", accountID: "acc-none", pin: "86\(10 + index)")
                    } catch let error as IssuerError {
                        return error.message
                    } catch {
                        return "\(error)"
                    }
                    return "removed"
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        // Five wrong PINs checked (the fifth locks), every other guess refused by the lock unchecked.
        #expect(outcomes.filter { $0.hasPrefix("the PIN is not correct") }.count == 5, "\(outcomes)")
        #expect(outcomes.filter { $0.hasPrefix("the app is locked after 5 wrong PINs") }.count == 15, "\(outcomes)")
    }

    @Test func aLockedAppRemovesNoAccount() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        for _ in 0..<IssuerAppAuthenticator.maxPINFailures {
            _ = try? await app.party.app.login(userID: "ch-alice", pin: "9999")
        }
        await expectIssuerError(.locked, "the app is locked") {
            _ = try await app.party.app.deleteAccount(userID: "ch-alice", accountID: "acc-alice-checking", pin: "2580")
        }
        let accounts = try app.party.app.accounts(userID: "ch-alice")
        #expect(accounts.accounts.count == 1)
        // The app's view says it is locked: it said only "PIN set", though every PIN was refused.
        #expect(accounts.pinSet && accounts.pinLocked)
        _ = try await app.party.enrolment.unlock(userID: "ch-alice", accountID: "")
        #expect(try !app.party.app.accounts(userID: "ch-alice").pinLocked)
    }

    @Test func linkedAccountsActivateInBulkWithAResultEach() async throws {
        let app = try App.make()
        // A user whose app holds no account has proved nothing yet: activate-linked set the PIN of a user who never
        // entered a code, activated every account and let them log in.
        await expectIssuerError(.failedPrecondition, "activate a first account with its activation code") {
            try await app.party.app.activateLinked(userID: "ch-alice", pin: "2580")
        }
        // A user the issuer does not have is named so, not sent to be enrolled.
        await expectIssuerError(.notFound, "the issuer has no user \"ch-nobody\"") {
            try await app.party.app.activateLinked(userID: "ch-nobody", pin: "2580")
        }
        #expect(try app.party.app.accounts(userID: "ch-alice").pinSet == false)
        #expect(app.tsp.state.withLock { $0.verifyCalls } == 0)
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "Checking", pin: "2580")
        app.tsp.state.withLock { _ = $0.refusing.insert("acc-alice-credit") }
        let response = try await app.party.app.activateLinked(userID: "ch-alice", pin: "2580")
        #expect(!response.pinSet)
        #expect(response.results.map(\.accountID) == ["acc-alice-credit"])
        #expect(response.results.map(\.result) == [.incorrectCode])
        app.tsp.state.withLock { $0.refusing = [] }
        await expectIssuerError(.unauthenticated, "not correct") {
            try await app.party.app.activateLinked(userID: "ch-alice", pin: "1470")
        }
        let retry = try await app.party.app.activateLinked(userID: "ch-alice", pin: "2580")
        #expect(retry.results.map(\.accountID) == ["acc-alice-credit"])
        #expect(retry.results.map(\.result) == [.success] && !retry.pinSet)
        #expect(try await app.party.app.activateLinked(userID: "ch-alice", pin: "2580").results.isEmpty)
    }

    /// A TSP that does not answer is named before the app's caller's deadline: its call is given the served call's
    /// time less a margin (`CallOptions.answeringInTime`), where with all of it both ended at once and the
    /// caller got its own bare DEADLINE_EXCEEDED, though the issuer knew the TSP was the one not answering. Run
    /// inside a served call's context with no server around it, so that only the TSP call's own timer can end it.
    @Test func aTSPThatDoesNotAnswerIsNamedWithinTheCallersDeadline() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        app.tsp.state.withLock { $0.hangLogins = true }
        let served = ServerContext(
            method: "/tokenet.issuer.v1.IssuerAppAuth/Login", metadata: Metadata(), peer: nil,
            deadline: .now + .seconds(2), traceID: "0000000000000ab")
        await expectIssuerError(.tspDidNotAnswer, "the TSP did not answer in time to log in") {
            try await ServerContext.$current.withValue(served) {
                _ = try await app.party.app.login(userID: "ch-alice", pin: "2580")
            }
        }
        // The TSP's call is given the served call's time less a fifth (at most a second), kept for the answer.
        let later = ServerContext(
            method: "/tokenet.issuer.v1.IssuerAppAuth/Login", metadata: Metadata(), peer: nil,
            deadline: .now + .seconds(10), traceID: "0000000000000ab")
        let timeout = try #require(
            ServerContext.$current.withValue(later) { CallOptions.answeringInTime.timeout })
        #expect(timeout <= .seconds(9) && timeout > .seconds(8), "\(timeout)")
        #expect(CallOptions.answeringInTime.timeout == nil)
    }

    @Test func loginUsesEachCounterOnceAndNeedsThePIN() async throws {
        let app = try App.make()
        await expectIssuerError(.notFound, "has not activated") {
            try await app.party.cardholderLogin.accessToken(forUser: "ch-alice", pin: "2580")
        }
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        let token = try await app.party.cardholderLogin.accessToken(forUser: "ch-alice", pin: "2580")
        #expect(token == "at1.token-for-dc-ref-1")
        let login = try await app.party.app.login(userID: "ch-alice", pin: "2580")
        #expect(login.deviceID == "dc-ref-1" && login.accountID == "acc-alice-checking")
        #expect(app.tsp.state.withLock { $0.counters["uc-ref-1"] } == 2)
        await expectIssuerError(.unauthenticated, "not correct") {
            try await app.party.cardholderLogin.accessToken(forUser: "ch-alice", pin: "1470")
        }
    }

    /// The app signs in with any of its accounts: one whose credentials the TSP no longer has no longer fails every
    /// PIN operation while another account works, and when none signs in, the first refusal names its account and
    /// the way out (it named a credential id alone).
    @Test func anAccountWhoseCredentialsAreGoneLeavesTheOthersToSignIn() async throws {
        let app = try App.make()
        for account in ["acc-alice-checking", "acc-alice-credit"] {
            let enrolled = try await app.enrol("ch-alice", account)
            _ = try await app.party.app.activate(
                code: enrolled.code, referenceID: enrolled.reference, displayName: "", pin: "2580")
        }
        let first = try #require(try app.party.store.appAccounts("ch-alice").first)
        app.tsp.state.withLock { $0.secrets[first.userCredentialID] = nil }
        let login = try await app.party.app.login(userID: "ch-alice", pin: "2580")
        #expect(login.accountID != first.accountID)
        app.tsp.state.withLock { $0.secrets.removeAll() }
        await expectIssuerError(
            .notFound,
            "account \(first.accountID): cannot log in: no credential of this issuer has id "
                + "\"\(first.userCredentialID)\"; activate account "
                + "\(first.accountID) again (tokenet issuer enroll ADDR ch-alice \(first.accountID), then tokenet "
                + "issuer-app activate with the code it sends) or remove it from the app"
        ) { _ = try await app.party.app.login(userID: "ch-alice", pin: "2580") }
    }

    @Test func aCounterThatRanAheadIsResynchronisedAtLogin() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        // Thirty logins that never reached the TSP: the app's counters are 30 ahead of the TSP's.
        for _ in 0..<30 { _ = try app.party.store.takeCounters(userID: "ch-alice", accountID: "acc-alice-checking") }
        let login = try await app.party.app.login(userID: "ch-alice", pin: "2580")
        #expect(login.accessToken == "at1.token-for-dc-ref-1")
        #expect(app.tsp.state.withLock { ($0.logins, $0.resyncs) } == (3, 2))
    }

    /// A resynchronisation the TSP refuses ends the login, with what to do: the login went on to send more codes,
    /// each one more failure of the credential at the TSP (one login spent five), and ended "login refused".
    @Test(arguments: [
        (TspV1.ResyncResult.incorrectCodes, IssuerError.Code.unauthenticated, "enrol the account again"),
        (.credentialLocked, .locked, "(tokenet issuer unlock ADDR ch-alice)"),
    ])
    func aRefusedResynchronisationEndsTheLogin(
        result: TspV1.ResyncResult, code: IssuerError.Code, advice: String
    ) async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        for _ in 0..<30 { _ = try app.party.store.takeCounters(userID: "ch-alice", accountID: "acc-alice-checking") }
        app.tsp.state.withLock { $0.resyncAnswer = .init(result: result, failuresLeft: 4, message: "not this time") }
        await expectIssuerError(code, "the TSP refused to resynchronise the account's credential: not this time") {
            _ = try await app.party.app.login(userID: "ch-alice", pin: "2580")
        }
        await expectIssuerError(code, advice) { _ = try await app.party.app.login(userID: "ch-alice", pin: "2580") }
        #expect(app.tsp.state.withLock { ($0.logins, $0.resyncs) } == (2, 2))
    }

    /// Logins tried while the TSP cannot be reached spend no codes: each moved the app's counters on, until they
    /// were beyond the TSP's resynchronisation window and no login could succeed again, whatever the PIN.
    @Test func loginsThatNeverReachTheTSPSpendNoCodes() async throws {
        var link: UnreachableSwitch?
        let app = try App.make(link: { caller in
            let made = UnreachableSwitch(caller)
            link = made
            return made
        })
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        let account = try #require(try app.party.store.appAccounts("ch-alice").first)
        let counters = try app.party.store.takeCounters(userID: "ch-alice", accountID: "acc-alice-checking")
        try app.party.store.giveBackCounters(of: account, to: counters, ifAdvancedBy: 1)
        try #require(link).set(unreachable: true)
        for _ in 0..<150 {
            await expectIssuerError(.unavailable, "cannot connect to the tsp-node") {
                _ = try await app.party.app.login(userID: "ch-alice", pin: "2580")
            }
        }
        let after = try app.party.store.takeCounters(userID: "ch-alice", accountID: "acc-alice-checking")
        #expect(after == counters)
        try app.party.store.giveBackCounters(of: account, to: after, ifAdvancedBy: 1)
        try #require(link).set(unreachable: false)
        let login = try await app.party.app.login(userID: "ch-alice", pin: "2580")
        #expect(login.accessToken == "at1.token-for-dc-ref-1")
        #expect(app.tsp.state.withLock { ($0.logins, $0.resyncs) } == (1, 0))
    }

    /// A code the TSP refuses as not correct, though the PIN opened the credentials, means the app and the TSP are
    /// out of step: the message says so and what to do, instead of inviting retries that lock the credential.
    @Test func aCodeRefusedAsNotCorrectSaysToEnrolAgain() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        // Beyond the fake TSP's resynchronisation window of 100.
        for _ in 0..<150 { _ = try app.party.store.takeCounters(userID: "ch-alice", accountID: "acc-alice-checking") }
        await expectIssuerError(.unauthenticated, "the app and the TSP are out of step") {
            _ = try await app.party.app.login(userID: "ch-alice", pin: "2580")
        }
        await expectIssuerError(
            .unauthenticated,
            "enrol the account again (tokenet issuer enroll ADDR ch-alice acc-alice-checking, then tokenet issuer-app "
                + "activate with the code it sends)"
        ) {
            _ = try await app.party.app.login(userID: "ch-alice", pin: "2580")
        }
    }

    /// A value that cannot be the app's PIN (too short, not digits) is refused before it is compared: it used one
    /// of the five tries, as a wrong PIN does.
    @Test func aValueThatCannotBeAPINUsesNoTry() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "2580")
        for value in ["12", "abcd", "123456789", "２５８０"] {
            for _ in 0..<3 {
                await expectIssuerError(.invalidArgument, "so it is not the app's PIN; no try was used") {
                    try await app.party.app.login(userID: "ch-alice", pin: value)
                }
            }
        }
        await expectIssuerError(.unauthenticated, "4 tries left") {
            try await app.party.app.login(userID: "ch-alice", pin: "1470")
        }
        _ = try await app.party.app.login(userID: "ch-alice", pin: "2580")
    }

    /// A user the issuer does not have was listed as an app with no account yet, exit status 0.
    @Test func theAccountsOfAnUnknownUserAreNotFound() throws {
        let app = try App.make()
        #expect(try app.party.app.accounts(userID: "ch-alice").accounts.isEmpty)
        #expect {
            try app.party.app.accounts(userID: "ch-nobody")
        } throws: { ($0 as? IssuerError)?.code == .notFound }
    }

    @Test func fiveWrongPINsLockTheAppUntilTheIssuerUnlocksIt() async throws {
        let app = try App.make()
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "25803691")
        await expectIssuerError(.unauthenticated, "4 tries left") {
            try await app.party.app.login(userID: "ch-alice", pin: "14703692")
        }
        // A right PIN clears the count.
        _ = try await app.party.app.login(userID: "ch-alice", pin: "25803691")
        for left in (1...4).reversed() {
            await expectIssuerError(.unauthenticated, left == 1 ? "1 try left" : "\(left) tries left") {
                try await app.party.app.login(userID: "ch-alice", pin: "14703692")
            }
        }
        await expectIssuerError(.locked, "now locked") {
            try await app.party.app.login(userID: "ch-alice", pin: "14703692")
        }
        await expectIssuerError(.locked, "tokenet issuer unlock") {
            try await app.party.app.login(userID: "ch-alice", pin: "25803691")
        }
        // Each wrong PIN is in the log, and the lock at warning: someone guessing a cardholder's PIN is audited.
        let wrong = app.logs.lines.filter { $0.contains("wrong app PIN") && $0.contains("user=ch-alice") }
        #expect(wrong.count == 5, "\(app.logs.lines)")
        #expect(app.logs.lines.contains { $0.contains("warning") && $0.contains("app locked after wrong PINs") })
        #expect(!app.logs.lines.contains { $0.contains("14703692") || $0.contains("25803691") })
        // The answer says the app itself was locked, beside the TSP's count (the fake TSP unlocks one each time).
        let unlocked = try await app.party.enrolment.unlock(userID: "ch-alice", accountID: "")
        #expect(unlocked.appUnlocked && unlocked.unlocked == 1)
        #expect(try await app.party.app.login(userID: "ch-alice", pin: "25803691").accountID == "acc-alice-checking")
        #expect(try await app.party.enrolment.unlock(userID: "ch-alice", accountID: "").appUnlocked == false)

        // With the TSP down, the failure says the app's own lock is lifted already: it said only that the unlock
        // failed, while the app's PIN worked again.
        for _ in 0..<5 { _ = try? await app.party.app.login(userID: "ch-alice", pin: "14703692") }
        app.tsp.state.withLock { $0.unlockDown = true }
        await expectIssuerError(.unavailable, "the app's own PIN lock is lifted, but its credentials at the TSP") {
            try await app.party.enrolment.unlock(userID: "ch-alice", accountID: "")
        }
        #expect(try await app.party.app.login(userID: "ch-alice", pin: "25803691").accountID == "acc-alice-checking")
    }

    @Test func unlockingAnUnknownUserIsNotFoundAndAsksNothingOfTheTSP() async throws {
        let app = try App.make()
        // No user at all is a request to fix, as Login and ActivateLinked say, not a user to look for.
        await expectIssuerError(.invalidArgument, "user_id is required") { try app.party.app.accounts(userID: "") }
        await expectIssuerError(.notFound, "no user \"ch-nobody\"") { try app.party.app.accounts(userID: "ch-nobody") }
        await expectIssuerError(.notFound, "no user \"ch-nobody\"") {
            try await app.party.enrolment.unlock(userID: "ch-nobody", accountID: "")
        }
        await expectIssuerError(.notFound, "no user \"ch-nobody\"") {
            try await app.party.enrolment.unlock(userID: "ch-nobody", accountID: "acc-alice-checking")
        }
        await expectIssuerError(.notFound, "no account \"acc-bob-checking\"") {
            try await app.party.enrolment.unlock(userID: "ch-alice", accountID: "acc-bob-checking")
        }
        #expect(app.tsp.state.withLock { $0.unlocks } == 0)
        #expect(try await app.party.enrolment.unlock(userID: "ch-alice", accountID: "").unlocked == 1)
        #expect(app.tsp.state.withLock { $0.unlocks } == 1)
    }

    @Test func credentialsAndPINsAreNotInClearOnDisk() async throws {
        let directory = try TestScratch.path("issuer-auth")
        let store = try IssuerStore.open(directory: directory)
        try store.importFixture(try Support.fixture())
        let app = try App.make(store: store)
        let first = try await app.enrol()
        _ = try await app.party.app.activate(
            code: first.code, referenceID: first.reference, displayName: "", pin: "25803691")
        _ = try await app.party.app.login(userID: "ch-alice", pin: "25803691")
        let devicePIN = try #require(try store.appUser("ch-alice")).devicePIN
        let secrets = app.tsp.state.withLock { Array($0.secrets.values) }
        var bytes: [UInt8] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasPrefix("issuer.sqlite")
        {
            bytes += Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
        }
        #expect(bytes.count > 0)
        #expect(!Self.contains(bytes, Array("25803691".utf8)))
        #expect(!Self.contains(bytes, Array(devicePIN.utf8)))
        for secret in secrets { #expect(!Self.contains(bytes, secret)) }
        let logs = app.logs.lines.joined(separator: "\n")
        #expect(!logs.contains("25803691") && !logs.contains(devicePIN))

        // A restarted issuer (the store opened again) still opens the credentials with the PIN and goes on counting.
        let restarted = try App.make(store: try IssuerStore.open(directory: directory), tsp: app.tsp)
        _ = try await restarted.party.app.login(userID: "ch-alice", pin: "25803691")
        #expect(app.tsp.state.withLock { $0.counters["uc-ref-1"] } == 2)
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return true }
        }
        return false
    }
}

/// Expects the body to fail with an issuer error of `code` whose message contains `text`.
func expectIssuerError<T>(
    _ code: IssuerError.Code, _ text: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async {
    do {
        _ = try await body()
        Issue.record("expected \(code) but the call succeeded", sourceLocation: sourceLocation)
    } catch {
        guard let error = error as? IssuerError else {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message.contains(text), "\(error.message)", sourceLocation: sourceLocation)
    }
}
