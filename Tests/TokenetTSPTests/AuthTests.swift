import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// Enrolment, activation, login and access tokens over in-memory connections, as issuer-1 (which registered
/// bank-a).
@Suite struct AuthTests {
    struct Auth {
        let harness: TSPHarness
        let enrolment: TspV1.Enrolment.Client
        let authentication: TspV1.Authentication.Client

        static func make(
            directory: String? = nil, clock: TestClock = TestClock(), register: Bool = true,
            configuration: TSPConfiguration = TSPHarness.configuration
        ) async throws -> Auth {
            let harness = try TSPHarness.make(configuration: configuration, directory: directory, clock: clock)
            if register { try await harness.registerIssuer() }
            let peer = PeerIdentity(role: .issuer, nodeID: "issuer-1")
            return Auth(
                harness: harness, enrolment: TspV1.Enrolment.Client(TSPHarness.connect(harness.router, as: peer)),
                authentication: TspV1.Authentication.Client(TSPHarness.connect(harness.router, as: peer)))
        }

        func enrol(_ user: String = "ch-alice", _ accounts: [String] = ["acc-1"]) async throws -> [TspV1.Activation] {
            try await enrolment.registerEnrolment(.init(userID: user, accountIds: accounts)).activations
        }

        func activate(_ activation: TspV1.Activation, code: String? = nil) async throws
            -> TspV1.VerifyActivationResponse
        {
            try await authentication.verifyActivation(
                .init(
                    activationCode: code ?? activation.activationCode, referenceID: activation.referenceID,
                    serverURL: activation.activationURL, displayName: "Checking"))
        }

        /// An activated account's two credentials.
        func credentials(_ user: String = "ch-alice", account: String = "acc-1") async throws -> (
            user: TspV1.HotpCredential, device: TspV1.HotpCredential
        ) {
            let response = try await activate(try await enrol(user, [account])[0])
            try #require(response.result == .success)
            return (try #require(response.userCredential), try #require(response.deviceCredential))
        }

        func login(
            _ user: TspV1.HotpCredential, _ userCounter: UInt64, _ device: TspV1.HotpCredential,
            _ deviceCounter: UInt64
        ) async throws -> TspV1.LoginResponse {
            try await authentication.login(
                .init(
                    userCredentialID: user.credentialID, userCode: try code(user, userCounter),
                    deviceCredentialID: device.credentialID, deviceCode: try code(device, deviceCounter)))
        }
    }

    static func code(_ credential: TspV1.HotpCredential, _ counter: UInt64) throws -> String {
        try HOTP(secret: Array(credential.secret), digits: Int(credential.digits)).code(counter: counter)
    }

    @Test func enrolActivateAndLogIn() async throws {
        let auth = try await Auth.make()
        let activations = try await auth.enrol("ch-alice", ["acc-1"])
        let activation = try #require(activations.first)
        #expect(activation.activationCode.count == 10)
        #expect(activation.referenceID.hasPrefix("ref-"))
        #expect(activation.activationURL == "tokenet://tsp")

        let wrong = try await auth.activate(activation, code: "AAAAAAAAAA")
        #expect(wrong.result == .incorrectCode)
        #expect(wrong.triesLeft == 4)
        let response = try await auth.activate(activation)
        #expect(response.result == .success)
        #expect(response.userID == "ch-alice" && response.accountID == "acc-1")
        let user = try #require(response.userCredential)
        let device = try #require(response.deviceCredential)
        #expect(user.secret.count == 20 && user.digits == 6 && user.algorithm == .sha1)
        #expect(user.credentialID != device.credentialID)

        let login = try await auth.login(user, 0, device, 0)
        #expect(login.result == .success)
        let claims = try auth.harness.accessTokens().verify(login.accessToken, now: auth.harness.clock.now)
        #expect(claims.issuerID == "bank-a" && claims.userID == "ch-alice")
        #expect(claims.deviceID == device.credentialID)
        #expect(claims.expiresAt.timeIntervalSince(claims.issuedAt) == 15 * 60)
        #expect(login.expiresAtMs == claims.expiresAt.unixMilliseconds)
        #expect(try auth.harness.accessTokens().user("ch-alice", ofIssuer: "bank-a", ownsAccount: "acc-1"))
        #expect(
            try !auth.harness.accessTokens().user("ch-alice", ofIssuer: "bank-a", ownsAccount: "acc-2"))
    }

    @Test func reusedExpiredAndExhaustedActivationCodes() async throws {
        let auth = try await Auth.make()
        let activations = try await auth.enrol("ch-alice", ["acc-1", "acc-2", "acc-3"])
        let activated = try await auth.activate(activations[0])
        #expect(activated.result == .success)
        let used = try await auth.activate(activations[0])
        #expect(
            used.result == .alreadyUsed
                && used.message == "the activation code was already used; the account is activated")
        // Once the account's credentials are removed, the code's answer no longer says the account is activated.
        _ = try await auth.authentication.removeCredentials(
            .init(
                userCredentialID: try #require(activated.userCredential).credentialID,
                deviceCredentialID: try #require(activated.deviceCredential).credentialID))
        let removed = try await auth.activate(activations[0])
        #expect(removed.result == .alreadyUsed)
        #expect(removed.message.contains("the account's credentials were removed since; ask the issuer to enrol"))

        for _ in 0..<4 { #expect(try await auth.activate(activations[1], code: "WRONGCODE2").result == .incorrectCode) }
        #expect(try await auth.activate(activations[1], code: "WRONGCODE2").result == .retriesExceeded)
        #expect(try await auth.activate(activations[1]).result == .retriesExceeded)

        auth.harness.clock.advance(seconds: 60 * 60)
        let expired = try await auth.activate(activations[2])
        #expect(expired.result == .expiredCode)
        #expect(expired.accountID == "acc-3")

        let unknown = try await auth.authentication.verifyActivation(
            .init(activationCode: "ABCDE-FGHJK", referenceID: "ref-nope"))
        #expect(unknown.result == .unknownReference)
        // What cannot be a code or a reference id uses no try and is not echoed back.
        await expectRPCError(.invalidArgument, "activation_code is not an activation code") {
            try await auth.authentication.verifyActivation(
                .init(activationCode: String(repeating: "A", count: 100_000), referenceID: activations[2].referenceID))
        }
        await expectRPCError(.invalidArgument, "display_name holds a card number ('************0009')") {
            try await auth.authentication.verifyActivation(
                .init(
                    activationCode: "ABCDEFGHJK", referenceID: activations[2].referenceID,
                    displayName: "4761000010000009"))
        }
        await expectRPCError(.invalidArgument, "reference_id is not one the TSP gives") {
            try await auth.authentication.verifyActivation(
                .init(activationCode: "ABCDEFGHJK", referenceID: "ref-" + String(repeating: "r", count: 100_000)))
        }
    }

    /// An account named twice got two activations, the first already replaced when the issuer delivered it; an id
    /// of 100,000 characters was stored and echoed. Both are refused now.
    @Test func anEnrolmentNamingAnAccountTwiceOrAnOverlongIDIsRefused() async throws {
        let auth = try await Auth.make()
        await expectRPCError(.invalidArgument, "account_ids names an account twice") {
            try await auth.enrol("ch-x", ["a", "b", "a"])
        }
        await expectRPCError(.invalidArgument, "user_id holds an id of 129 bytes; at most 128") {
            try await auth.enrol(String(repeating: "u", count: 129), ["a"])
        }
        await expectRPCError(.invalidArgument, "account_ids[1] holds an id of 200 bytes") {
            try await auth.enrol("ch-x", ["a", String(repeating: "a", count: 200)])
        }
        // Stored, answered and logged in full: no card number, no control or format character.
        await expectRPCError(.invalidArgument, "user_id must be free of card numbers") {
            try await auth.enrol("4111 1111 1111 1111", ["a"])
        }
        await expectRPCError(.invalidArgument, "account_ids[0] must be 1 to 128 characters without control or format") {
            try await auth.enrol("ch-x", ["id\u{202E}RTL\u{1B}[31m\r\nX"])
        }
        #expect(try await auth.enrol("Alice Martin", ["acc 1"]).count == 1)
        #expect(try await auth.enrol("ch-x", ["a", "b"]).count == 2)
    }

    /// An account has one owner: another user is refused while the owner's credentials are active (the second
    /// user's sign-in could activate the owner's tokens in-app), and a pending enrolment of another user is replaced
    /// by the newer one, so that two users never hold credentials for one account.
    @Test func anAccountHasOneOwner() async throws {
        let auth = try await Auth.make()
        let alice = try await auth.credentials("ch-alice", account: "acc-1")
        await expectRPCError(
            .failedPrecondition,
            "account acc-1 is enrolled to user ch-alice, who holds credentials for it: an account has one owner"
        ) { try await auth.enrol("ch-zed", ["acc-2", "acc-1"]) }
        let bob = try await auth.enrol("ch-bob", ["acc-2"])[0]
        let carol = try await auth.enrol("ch-carol", ["acc-2"])[0]
        #expect(try await auth.activate(bob).result == .expiredCode)
        #expect(try await auth.activate(carol).result == .success)
        #expect(try await auth.enrol("ch-alice", ["acc-1"]).count == 1)
        // Once the owner's credentials are removed, the account can be enrolled for another user.
        _ = try await auth.authentication.removeCredentials(
            .init(userCredentialID: alice.user.credentialID, deviceCredentialID: alice.device.credentialID))
        #expect(try await auth.activate(try await auth.enrol("ch-zed", ["acc-1"])[0]).result == .success)
    }

    @Test func aNewRegistrationReplacesThePendingCode() async throws {
        let auth = try await Auth.make()
        let old = try await auth.enrol()[0]
        let new = try await auth.enrol()[0]
        #expect(try await auth.activate(old).result == .expiredCode)
        #expect(try await auth.activate(new).result == .success)
    }

    @Test func bulkActivationReportsEachAccount() async throws {
        let auth = try await Auth.make()
        let activations = try await auth.enrol("ch-alice", ["acc-1", "acc-2", "acc-3"])
        let response = try await auth.authentication.verifyActivations(
            .init(activations: [
                .init(activationCode: activations[0].activationCode, referenceID: activations[0].referenceID),
                .init(activationCode: "BADBADBAD2", referenceID: activations[1].referenceID),
                .init(activationCode: activations[2].activationCode, referenceID: activations[2].referenceID),
            ]))
        #expect(response.results.map(\.result) == [.success, .incorrectCode, .success])
        #expect(response.results.map(\.accountID) == ["acc-1", "acc-2", "acc-3"])
        #expect(response.results[1].userCredential == nil)
    }

    /// A bulk enrolment registers all its accounts or none: one found held by another user in the registering
    /// transaction (enrolled by them since the service's check) left the accounts before it with new pending codes
    /// that the refused call never gave the issuer, and their codes the issuer held no longer worked.
    @Test func aBulkEnrolmentRegistersAllOrNone() async throws {
        let auth = try await Auth.make()
        let pending = try await auth.enrol("ch-alice", ["acc-1"])[0]
        #expect(try await auth.activate(try await auth.enrol("ch-bob", ["acc-2"])[0]).result == .success)
        let store = try TSPStore.open(
            path: auth.harness.directory + "/tsp.sqlite",
            key: try TSPKeyFiles.loadVault(dataDirectory: auth.harness.directory))
        #expect(throws: TSPError.self) {
            try store.registerEnrolments(
                issuerID: "bank-a", userID: "ch-alice",
                [("acc-1", "ref-new-1", "ABCDEFGH23"), ("acc-2", "ref-new-2", "ABCDEFGH45")], expiresAtMs: .max / 2,
                attempts: 5, nowMs: auth.harness.clock.now.unixMilliseconds)
        }
        try store.database.close()
        #expect(try await auth.activate(pending).result == .success)
    }

    /// An entry that cannot be an activation refuses the whole call before any account is activated: activated
    /// one by one, the accounts before it had their credentials replaced, and the call's refusal lost the new ones.
    @Test func aBulkActivationWithAnUnusableEntryActivatesNothing() async throws {
        let auth = try await Auth.make()
        let activations = try await auth.enrol("ch-alice", ["acc-1", "acc-2"])
        let call = TspV1.VerifyActivationsRequest(activations: [
            .init(activationCode: activations[0].activationCode, referenceID: activations[0].referenceID),
            .init(activationCode: "abc", referenceID: activations[1].referenceID),
        ])
        await expectRPCError(
            .invalidArgument, "activations[1]: activation_code is not an activation code"
        ) {
            try await auth.authentication.verifyActivations(call)
        }
        // Nothing was used: both codes still activate their accounts.
        #expect(try await auth.activate(activations[0]).result == .success)
        #expect(try await auth.activate(activations[1]).result == .success)
    }

    @Test func aCodeIsNeverAcceptedTwiceAlsoAfterARestart() async throws {
        let clock = TestClock()
        let first = try await Auth.make(clock: clock)
        let (user, device) = try await first.credentials()
        #expect(try await first.login(user, 0, device, 0).result == .success)
        #expect(try await first.login(user, 0, device, 0).result == .incorrectCode)

        let second = try await Auth.make(directory: first.harness.directory, clock: clock, register: false)
        let replay = try await second.login(user, 0, device, 0)
        #expect(replay.result == .incorrectCode)
        #expect(replay.failedCredentialID == user.credentialID)
        #expect(try await second.login(user, 1, device, 1).result == .success)
        // The token signed before the restart still verifies: the signing key is in keys/access-token.key.
        let before = try await first.login(user, 2, device, 2)
        #expect(before.result == .success)
        _ = try second.harness.accessTokens().verify(before.accessToken, now: clock.now)
    }

    /// Both codes wrong: both credentials' failures count, and the answer names both; it named the user
    /// credential alone, and the device credential's "failures left" then fell by several at once.
    @Test func twoWrongCodesNameBothCredentials() async throws {
        let auth = try await Auth.make()
        let (user, device) = try await auth.credentials()
        let response = try await auth.authentication.login(
            .init(
                userCredentialID: user.credentialID, userCode: "000000", deviceCredentialID: device.credentialID,
                deviceCode: "000000"))
        #expect(response.result == .incorrectCode && response.failedCredentialID == user.credentialID)
        #expect(
            response.message
                == "the code of \(user.credentialID) is not correct; 9 failures left; also the code of "
                + "\(device.credentialID) is not correct; 9 failures left")
        // One wrong code names only its credential.
        let one = try await auth.authentication.login(
            .init(
                userCredentialID: user.credentialID, userCode: try Self.code(user, 0),
                deviceCredentialID: device.credentialID, deviceCode: "000000"))
        #expect(one.failedCredentialID == device.credentialID)
        #expect(one.message == "the code of \(device.credentialID) is not correct; 8 failures left")
    }

    @Test func lockoutAfterTenFailuresUntilTheIssuerUnlocks() async throws {
        let auth = try await Auth.make()
        let (user, device) = try await auth.credentials()
        // A code that is not digits can be no credential's: refused, and no try is used (it counted towards the lock).
        for code in ["abc", "12345678901", "１２３４５６"] {
            await expectRPCError(.invalidArgument, "user_code must be the decimal digits the credential shows") {
                try await auth.authentication.login(
                    .init(
                        userCredentialID: user.credentialID, userCode: code, deviceCredentialID: device.credentialID,
                        deviceCode: try Self.code(device, 0)))
            }
        }
        for attempt in 1...9 {
            let response = try await auth.authentication.login(
                .init(
                    userCredentialID: user.credentialID, userCode: "000000", deviceCredentialID: device.credentialID,
                    deviceCode: try Self.code(device, UInt64(attempt - 1))))
            #expect(response.result == .incorrectCode)
            #expect(response.failuresLeft == UInt32(10 - attempt))
        }
        let locking = try await auth.authentication.login(
            .init(
                userCredentialID: user.credentialID, userCode: "000000", deviceCredentialID: device.credentialID,
                deviceCode: try Self.code(device, 9)))
        #expect(locking.result == .credentialLocked)
        #expect(try await auth.login(user, 0, device, 10).result == .credentialLocked)

        // Locked, the account's credentials cannot be removed (and the account activated again unlocked) without
        // the issuer, nor does its owner prove ownership with them.
        await expectRPCError(.failedPrecondition, "the credentials of account acc-1 are locked") {
            try await auth.authentication.removeCredentials(
                .init(userCredentialID: user.credentialID, deviceCredentialID: device.credentialID))
        }
        let store = try TSPStore.open(
            path: auth.harness.directory + "/tsp.sqlite",
            key: try TSPKeyFiles.loadVault(dataDirectory: auth.harness.directory))
        #expect(try !store.hasActivatedAccount(issuerID: "bank-a", userID: "ch-alice", accountID: "acc-1"))

        #expect(try await auth.enrolment.unlockCredentials(.init(userID: "ch-alice")).unlocked == 1)
        #expect(try store.hasActivatedAccount(issuerID: "bank-a", userID: "ch-alice", accountID: "acc-1"))
        try store.database.close()
        #expect(try await auth.login(user, 0, device, 11).result == .success)
    }

    @Test func resynchronisationWithTwoConsecutiveCodes() async throws {
        let auth = try await Auth.make()
        let (user, device) = try await auth.credentials()
        let ahead = try await auth.login(user, 40, device, 0)
        #expect(ahead.result == .resyncRequired)
        let resync = try await auth.authentication.resync(
            .init(
                credentialID: user.credentialID, firstCode: try Self.code(user, 41),
                secondCode: try Self.code(user, 42)))
        #expect(resync.result == .success)
        #expect(try await auth.login(user, 43, device, 1).result == .success)
    }

    @Test func forgedExpiredAndForeignTokensAreUnauthenticated() async throws {
        let auth = try await Auth.make()
        let (user, device) = try await auth.credentials()
        let token = try await auth.login(user, 0, device, 0).accessToken
        let verifier = try auth.harness.accessTokens()

        func expectUnauthenticated(_ token: String, _ text: String, now: Date? = nil) {
            do {
                _ = try verifier.verify(token, now: now ?? auth.harness.clock.now)
                Issue.record("token accepted")
            } catch {
                #expect(error.code == .unauthenticated)
                #expect(error.message.contains(text), "\(error.message)")
            }
        }
        expectUnauthenticated(token, "expired", now: auth.harness.clock.now.addingTimeInterval(15 * 60))
        // Another TSP's key: a different data directory.
        let other = try await Auth.make()
        let (otherUser, otherDevice) = try await other.credentials()
        let foreignTSP = try await other.login(otherUser, 0, otherDevice, 0).accessToken
        expectUnauthenticated(foreignTSP, "signature")
        // Claims altered (another user), signature kept.
        let parts = token.split(separator: ".")
        var claims = try #require(Base64URL.decode(parts[1]))
        claims = Array(
            String(decoding: claims, as: UTF8.self).replacingOccurrences(of: "ch-alice", with: "ch-bobby").utf8)
        expectUnauthenticated("at1.\(Base64URL.encode(claims)).\(parts[2])", "signature")
        expectUnauthenticated("garbage", "malformed")
        expectUnauthenticated("at1.x", "malformed")
        // Another issuer's token.
        do {
            _ = try verifier.verify(token, now: auth.harness.clock.now, issuedTo: "bank-b")
            Issue.record("foreign issuer's token accepted")
        } catch {
            #expect(error.code == .unauthenticated)
        }
        #expect(try verifier.verify(token, now: auth.harness.clock.now, issuedTo: "bank-a").userID == "ch-alice")
    }

    /// RemoveCredentials removes one account's pair: the user credential of one account with the device credential
    /// of another removed one of each, and left both accounts unable to log in or to be enrolled for anyone else.
    /// Such a request, a pair given the wrong way round, or one credential the TSP does not hold with one it does,
    /// is refused and removes nothing.
    @Test func onlyOneAccountsPairIsRemoved() async throws {
        let auth = try await Auth.make()
        let alice = try await auth.credentials("ch-alice", account: "acc-1")
        let chloe = try await auth.credentials("ch-chloe", account: "acc-2")
        let refusals: [(TspV1.RemoveCredentialsRequest, String)] = [
            (
                .init(userCredentialID: alice.user.credentialID, deviceCredentialID: chloe.device.credentialID),
                "are not one account's credentials (the user credential is account acc-1's, the device credential "
                    + "account acc-2's); nothing was removed"
            ),
            (
                .init(userCredentialID: alice.device.credentialID, deviceCredentialID: alice.user.credentialID),
                "is a device credential, given as the user credential; nothing was removed"
            ),
            (
                .init(userCredentialID: alice.user.credentialID, deviceCredentialID: "dc-unknown"),
                "dc-unknown is not one of this issuer's credentials, and \(alice.user.credentialID) is account acc-1's"
            ),
        ]
        for (request, message) in refusals {
            await expectRPCError(.invalidArgument, message) { try await auth.authentication.removeCredentials(request) }
        }
        // Both accounts still log in.
        #expect(try await auth.login(alice.user, 0, alice.device, 0).result == .success)
        #expect(try await auth.login(chloe.user, 0, chloe.device, 0).result == .success)
        let removed = try await auth.authentication.removeCredentials(
            .init(userCredentialID: chloe.user.credentialID, deviceCredentialID: chloe.device.credentialID))
        #expect(removed.removed == 2)
    }

    /// An access token is a signed claim, good for 15 minutes: an account removed from the app (or activated again
    /// on another device) kept activating cards with the tokens it had signed in. The token's device credential must
    /// now still exist.
    @Test func removedOrReplacedCredentialsRevokeTheirAccessTokens() async throws {
        let auth = try await Auth.make()
        let (user, device) = try await auth.credentials()
        let token = try await auth.login(user, 0, device, 0).accessToken
        let verifier = try auth.harness.accessTokens()
        #expect(try verifier.verify(token, now: auth.harness.clock.now).deviceID == device.credentialID)

        await #expect(throws: RPCError.self) {
            _ = try await auth.authentication.removeCredentials(.init(userCredentialID: user.credentialID))
        }
        let removed = try await auth.authentication.removeCredentials(
            .init(userCredentialID: user.credentialID, deviceCredentialID: device.credentialID))
        #expect(removed.removed == 2)
        let again = try await auth.authentication.removeCredentials(
            .init(userCredentialID: user.credentialID, deviceCredentialID: device.credentialID))
        #expect(again.removed == 0)
        do {
            _ = try verifier.verify(token, now: auth.harness.clock.now)
            Issue.record("a token of removed credentials was accepted")
        } catch {
            #expect(error.code == .unauthenticated)
            #expect(error.message.contains("no longer registered"), "\(error.message)")
        }
        #expect(try !verifier.user("ch-alice", ofIssuer: "bank-a", ownsAccount: "acc-1"))
        do {
            _ = try await auth.login(user, 1, device, 1)
            Issue.record("removed credentials logged in")
        } catch let error as RPCError {
            #expect(error.code == .notFound)
        }

        // Activating the account again replaces its credentials, and the old device's tokens with them.
        let (newUser, newDevice) = try await auth.credentials()
        let newToken = try await auth.login(newUser, 0, newDevice, 0).accessToken
        let (_, _) = try await auth.credentials()
        #expect(throws: TSPError.self) { _ = try verifier.verify(newToken, now: auth.harness.clock.now) }
    }

    @Test func thePolicyFileSetsTheAuthenticationSettings() throws {
        let directory = try TSPHarness.temporaryDirectory()
        let path = directory + "/" + TSPConfiguration.fileName
        try Data(#"{"access_token_ttl_s": 60, "hotp_digits": 8, "hotp_look_ahead": 5, "hotp_max_failures": 3}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        let configuration = try TSPConfiguration.load(dataDirectory: directory)
        #expect(configuration.accessTokenLifetime == .seconds(60))
        #expect(configuration.hotpPolicy == .init(lookAhead: 5, resyncWindow: 100, maxFailures: 3))
        #expect(configuration.hotpDigits == 8)
        try Data(#"{"hotp_look_ahead": 100, "hotp_resync_window": 50}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: NodeError.self) { try TSPConfiguration.load(dataDirectory: directory) }
        try Data(#"{"hotp_digits": 7}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: NodeError.self) { try TSPConfiguration.load(dataDirectory: directory) }
        try Data(#"{"auth_server_url": "tokenet://tsp.example:7001"}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(try TSPConfiguration.load(dataDirectory: directory).authServerURL == "tokenet://tsp.example:7001")
        for bad in [#"{"auth_server_url": "tsp"}"#, #"{"auth_server_url": 7}"#, #"{"auth_server_url": "a b://c"}"#] {
            try Data(bad.utf8).write(to: URL(fileURLWithPath: path))
            #expect(throws: NodeError.self) { try TSPConfiguration.load(dataDirectory: directory) }
        }
    }

    @Test func eightDigitCredentialsAndAShortTokenLifetime() async throws {
        var configuration = TSPHarness.configuration
        configuration.hotpDigits = 8
        configuration.accessTokenLifetime = .seconds(60)
        let auth = try await Auth.make(configuration: configuration)
        let (user, device) = try await auth.credentials()
        #expect(user.digits == 8 && device.digits == 8)
        let login = try await auth.login(user, 0, device, 0)
        #expect(login.result == .success)
        #expect(login.expiresAtMs == auth.harness.clock.now.unixMilliseconds + 60_000)
    }

    /// The expiry a login reports is the one its token holds (whole seconds), also for a login made between two
    /// seconds: reported to the millisecond, the token was refused up to a second before it.
    @Test func theReportedExpiryIsTheTokens() async throws {
        let auth = try await Auth.make()
        let (user, device) = try await auth.credentials()
        auth.harness.clock.advance(seconds: 0.999)
        let login = try await auth.login(user, 0, device, 0)
        let expiry = Date(timeIntervalSince1970: TimeInterval(login.expiresAtMs) / 1000)
        #expect(login.expiresAtMs % 1000 == 0)
        let verifier = try auth.harness.accessTokens()
        #expect(try verifier.verify(login.accessToken, now: expiry.addingTimeInterval(-0.001)).userID == "ch-alice")
        #expect(throws: TSPError.self) { try verifier.verify(login.accessToken, now: expiry) }
    }

    @Test func onlyARegisteredIssuerEnrolsAndCredentialsStayItsOwn() async throws {
        let auth = try await Auth.make(register: false)
        await expectRPCError(.failedPrecondition, "RegisterIssuer") { try await auth.enrol() }
        try await auth.harness.registerIssuer()
        await expectRPCError(.invalidArgument, "user_id") {
            try await auth.enrolment.registerEnrolment(.init(accountIds: ["a"]))
        }
        await expectRPCError(.invalidArgument, "1 to 100 accounts") {
            try await auth.enrolment.registerEnrolment(
                .init(userID: "ch-alice", accountIds: (0...100).map { "acc-\($0)" }))
        }
        await expectRPCError(.invalidArgument, "1 to 100 activations") {
            try await auth.authentication.verifyActivations(.init())
        }
        let (user, device) = try await auth.credentials()
        // A wallet may not call the authentication service.
        let wallet = TspV1.Authentication.Client(
            TSPHarness.connect(auth.harness.router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1")))
        await expectRPCError(.permissionDenied, "role wallet") {
            try await wallet.login(.init(userCredentialID: user.credentialID, userCode: "1"))
        }
        await expectRPCError(.invalidArgument, "not a device credential") {
            try await auth.authentication.login(
                .init(
                    userCredentialID: user.credentialID, userCode: "123456", deviceCredentialID: user.credentialID,
                    deviceCode: "123456"))
        }
        await expectRPCError(.notFound, "no credential") {
            try await auth.authentication.login(
                .init(
                    userCredentialID: "uc-nope", userCode: "123456", deviceCredentialID: device.credentialID,
                    deviceCode: "123456"))
        }
    }

    @Test func secretsAndCodesNeverReachTheLogsOrTheDatabaseInClear() async throws {
        let auth = try await Auth.make()
        let activation = try await auth.enrol()[0]
        let response = try await auth.activate(activation)
        let user = try #require(response.userCredential)
        let login = try await auth.login(user, 0, try #require(response.deviceCredential), 0)
        #expect(login.result == .success)
        let logs = auth.harness.logs.lines.joined(separator: "\n")
        #expect(!logs.contains(activation.activationCode))
        #expect(!logs.contains(login.accessToken))
        var database: [UInt8] = []
        for suffix in ["", "-wal"] {
            if let data = FileManager.default.contents(atPath: auth.harness.directory + "/tsp.sqlite" + suffix) {
                database += Array(data)
            }
        }
        #expect(!database.isEmpty)
        #expect(!contains(database, Array(user.secret)))
        #expect(!contains(database, Array(activation.activationCode.utf8)))
    }

    /// An activation code is stored keyed with the vault, as a one-time code is: its unkeyed hash, its reference
    /// id beside it, could be searched for within the code's hour by whoever read the database. A code stored
    /// unkeyed before an upgrade still activates for the rest of its life.
    @Test func anActivationCodeIsStoredKeyedAndAnOlderUnkeyedOneStillWorks() async throws {
        let auth = try await Auth.make()
        let store = try TSPStore.open(
            path: auth.harness.directory + "/tsp.sqlite",
            key: try TSPKeyFiles.loadVault(dataDirectory: auth.harness.directory))
        let activation = try await auth.enrol()[0]
        let (reference, code) = (activation.referenceID, activation.activationCode)
        let stored: [UInt8] = try #require(
            try store.database.queryOne(
                "SELECT code_digest FROM auth_enrolments WHERE reference_id = ?", [reference]
            )?.get(0))
        #expect(stored == (try store.activationDigest(referenceID: reference, code: code)))
        #expect(stored != (try TSPStore.legacyActivationDigest(referenceID: reference, code: code)))

        let older = try await auth.enrol("ch-bob", ["acc-2"])[0]
        _ = try store.database.execute(
            "UPDATE auth_enrolments SET code_digest = ? WHERE reference_id = ?",
            [
                try TSPStore.legacyActivationDigest(referenceID: older.referenceID, code: older.activationCode),
                older.referenceID,
            ])
        #expect(try await auth.activate(older).result == .success)
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return true }
        }
        return false
    }
}

extension TSPHarness {
    /// The verifier the TSP's services get as `TSPService.accessTokens`, over this harness's data directory (same
    /// database and keys).
    func accessTokens() throws -> any AccessTokenVerifier {
        TSPAuthentication(
            store: try TSPStore.open(
                path: directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: directory)),
            signer: AccessTokenSigner(key: try TSPKeyFiles.loadAccessTokenKey(dataDirectory: directory)),
            configuration: TSPConfiguration(), now: { clock.now })
    }
}
