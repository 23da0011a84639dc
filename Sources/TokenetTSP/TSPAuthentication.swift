import Foundation
import TokenetCard

/// The TSP's strong authentication: registers enrolments, activates them into HOTP credentials, checks logins and
/// signs the access tokens; and, as `AccessTokenVerifier`, checks those tokens for the TSP's other services
/// (`TSPService.accessTokens`).
final class TSPAuthentication: AccessTokenVerifier, Sendable {
    let store: TSPStore
    let signer: AccessTokenSigner
    let configuration: TSPConfiguration
    let now: @Sendable () -> Date

    /// Activation codes use letters and digits that cannot be confused when read aloud or typed (no 0/O, 1/I/L).
    static let activationAlphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")
    static let activationCodeLength = 10
    static let secretSize = 20

    init(
        store: TSPStore, signer: AccessTokenSigner, configuration: TSPConfiguration,
        now: @escaping @Sendable () -> Date
    ) {
        self.store = store
        self.signer = signer
        self.configuration = configuration
        self.now = now
    }

    // MARK: AccessTokenVerifier

    /// The signature and expiry, and then the device credential the token was signed in with: removing the account
    /// from the app (or activating it again) revokes the tokens it signed in before they expire.
    func verify(_ token: String, now: Date) throws(TSPError) -> AccessTokenClaims {
        let claims = try signer.verify(token, now: now)
        let current: Bool
        do {
            current = try store.hasCredential(claims.deviceID, issuerID: claims.issuerID)
        } catch {
            throw TSPError.internal("checking an access token's device credential", error)
        }
        guard current else {
            throw TSPError(
                .unauthenticated,
                "the access token was signed in with device credential \(claims.deviceID), which is no longer "
                    + "registered (its account was removed from the app or activated again); sign in again")
        }
        return claims
    }

    func user(_ userID: String, ofIssuer issuerID: String, ownsAccount accountID: String) throws(TSPError) -> Bool {
        do {
            return try store.hasActivatedAccount(issuerID: issuerID, userID: userID, accountID: accountID)
        } catch {
            throw TSPError.internal("checking an account's enrolment", error)
        }
    }

    // MARK: Enrolment

    /// Registers the enrolment of each account, all or none (`TSPStore.registerEnrolments`), and returns their
    /// activations in the same order (the only time the codes exist in clear at the TSP).
    func register(issuerID: String, userID: String, accountIDs: [String]) throws -> [(
        accountID: String, code: String, referenceID: String, expiresAtMs: UInt64
    )] {
        let nowMs = now().unixMilliseconds
        let expiresAtMs = nowMs + configuration.activationCodeValidity.milliseconds
        var enrolments: [(accountID: String, referenceID: String, code: String)] = []
        for accountID in accountIDs {
            enrolments.append(
                (accountID, "ref-" + Base64URL.encode(try SecureRandom.bytes(12)), try Self.activationCode()))
        }
        try store.registerEnrolments(
            issuerID: issuerID, userID: userID, enrolments, expiresAtMs: expiresAtMs,
            attempts: configuration.activationMaxAttempts, nowMs: nowMs)
        return enrolments.map { ($0.accountID, $0.code, $0.referenceID, expiresAtMs) }
    }

    func activate(issuerID: String, referenceID: String, code: String, displayName: String) throws
        -> ActivationAnswer
    {
        try store.verifyActivation(
            issuerID: issuerID, referenceID: referenceID, code: code, displayName: displayName,
            user: try newCredential(prefix: "uc-"), device: try newCredential(prefix: "dc-"),
            nowMs: now().unixMilliseconds)
    }

    /// Checks both codes; on success signs an access token bound to the user and the device credential.
    func login(
        issuerID: String, userCredentialID: String, userCode: String, deviceCredentialID: String, deviceCode: String
    ) throws -> (answer: LoginAnswer, token: String?, expiresAt: Date?) {
        let issuedAt = now()
        let answer = try store.login(
            issuerID: issuerID, userCredentialID: userCredentialID, userCode: userCode,
            deviceCredentialID: deviceCredentialID, deviceCode: deviceCode, policy: configuration.hotpPolicy,
            nowMs: issuedAt.unixMilliseconds)
        guard case .accepted(let userID, _, let deviceID) = answer else { return (answer, nil, nil) }
        // In whole seconds, as the token holds it: the exact millisecond reported a token good for up to a second
        // after the moment it was refused.
        let expiresAt = Date(
            timeIntervalSince1970: (issuedAt.timeIntervalSince1970
                + TimeInterval(configuration.accessTokenLifetime.milliseconds) / 1000).rounded(.down))
        let token = try signer.issue(
            AccessTokenClaims(
                issuerID: issuerID, userID: userID, deviceID: deviceID, issuedAt: issuedAt, expiresAt: expiresAt))
        return (answer, token, expiresAt)
    }

    private func newCredential(prefix: String) throws -> ProvisionedCredential {
        ProvisionedCredential(
            id: prefix + Base64URL.encode(try SecureRandom.bytes(12)), secret: try SecureRandom.bytes(Self.secretSize),
            digits: configuration.hotpDigits, counter: 0)
    }

    static func activationCode() throws -> String {
        // 256 is not a multiple of 31: bytes at or above 248 are drawn again so every character is equally likely.
        var code = ""
        while code.count < activationCodeLength {
            for byte in try SecureRandom.bytes(activationCodeLength) where byte < 248 {
                if code.count < activationCodeLength {
                    code.append(activationAlphabet[Int(byte) % activationAlphabet.count])
                }
            }
        }
        return code
    }
}

extension AccessTokenVerifier {
    /// `verify`, and the token must have been issued to `issuerID`'s user: another issuer's token is UNAUTHENTICATED
    /// here, whatever its signature.
    func verify(_ token: String, now: Date, issuedTo issuerID: String) throws(TSPError) -> AccessTokenClaims {
        let claims = try verify(token, now: now)
        guard claims.issuerID == issuerID else {
            throw TSPError(
                .unauthenticated, "the access token was issued to another issuer's user; log in with this issuer's app")
        }
        return claims
    }
}
