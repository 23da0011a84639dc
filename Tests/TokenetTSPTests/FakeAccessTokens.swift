import Foundation
import Synchronization

@testable import TokenetTSP

/// An authentication service whose tokens a test mints: a token is genuine only if minted here, and valid until
/// its expiry by the TSP's clock. Owners of accounts are set by the test.
final class FakeAccessTokens: AccessTokenVerifier {
    private struct State {
        var minted: [String: AccessTokenClaims] = [:]
        var owners: Set<String> = []
    }
    private let state = Mutex(State())

    func mint(issuer: String = "bank-a", user: String, device: String = "phone-1", expiresAt: Date) -> String {
        let token = "at-\(UUID().uuidString)"
        let claims = AccessTokenClaims(
            issuerID: issuer, userID: user, deviceID: device, issuedAt: expiresAt.addingTimeInterval(-600),
            expiresAt: expiresAt)
        state.withLock { $0.minted[token] = claims }
        return token
    }

    func own(_ user: String, _ account: String, issuer: String = "bank-a") {
        _ = state.withLock { $0.owners.insert("\(issuer)/\(user)/\(account)") }
    }

    func verify(_ token: String, now: Date) throws(TSPError) -> AccessTokenClaims {
        guard let claims = state.withLock({ $0.minted[token] }) else {
            throw TSPError(.unauthenticated, "the access token's signature does not verify")
        }
        guard claims.expiresAt > now else { throw TSPError(.unauthenticated, "the access token has expired") }
        return claims
    }

    func user(_ userID: String, ofIssuer issuerID: String, ownsAccount accountID: String) throws(TSPError) -> Bool {
        state.withLock { $0.owners.contains("\(issuerID)/\(userID)/\(accountID)") }
    }
}
