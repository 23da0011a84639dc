import Foundation
import TokenetCard

/// Access tokens: `at1.` + base64url(JSON claims) + `.` + base64url(HMAC-SHA-256 over everything before the second
/// dot), under a key only the TSP holds (`keys/access-token.key`, 0600). Claims: `iss` issuer, `sub` user, `dev`
/// device credential, `iat`/`exp` in Unix seconds, `jti` a random id. Only the TSP verifies them, so a symmetric key
/// suffices; another token service's tokens (another key) fail the signature check.
struct AccessTokenSigner: Sendable {
    static let prefix = "at1."

    private let key: [UInt8]

    init(key: [UInt8]) { self.key = key }

    private struct Payload: Codable {
        var iss: String
        var sub: String
        var dev: String
        var iat: Int64
        var exp: Int64
        var jti: String
    }

    func issue(_ claims: AccessTokenClaims) throws -> String {
        let payload = Payload(
            iss: claims.issuerID, sub: claims.userID, dev: claims.deviceID,
            iat: Int64(claims.issuedAt.timeIntervalSince1970), exp: Int64(claims.expiresAt.timeIntervalSince1970),
            jti: Base64URL.encode(try SecureRandom.bytes(16)))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = Self.prefix + Base64URL.encode(Array(try encoder.encode(payload)))
        return body + "." + Base64URL.encode(try HMAC.code(.sha256, key: key, message: Array(body.utf8)))
    }

    /// The claims of a token this TSP signed that has not expired at `now`; otherwise UNAUTHENTICATED naming the
    /// failed check.
    func verify(_ token: String, now: Date) throws(TSPError) -> AccessTokenClaims {
        guard token.hasPrefix(Self.prefix), token.utf8.count <= 4096 else {
            throw TSPError(.unauthenticated, "the access token is malformed: it is not a Tokenet access token")
        }
        let parts = token.dropFirst(Self.prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payloadBytes = Base64URL.decode(parts[0]),
            let signature = Base64URL.decode(parts[1])
        else {
            throw TSPError(.unauthenticated, "the access token is malformed: expected at1.PAYLOAD.SIGNATURE")
        }
        let body = Self.prefix + parts[0]
        let expected: [UInt8]
        do {
            expected = try HMAC.code(.sha256, key: key, message: Array(body.utf8))
        } catch {
            throw TSPError(.internal, "the access token could not be checked", cause: error)
        }
        guard HMAC.constantTimeEquals(expected, signature) else {
            throw TSPError(
                .unauthenticated,
                "the access token's signature does not verify: it was altered or not issued by this token service; "
                    + "log in again")
        }
        guard let payload = try? JSONDecoder().decode(Payload.self, from: Data(payloadBytes)) else {
            throw TSPError(.unauthenticated, "the access token's claims cannot be read")
        }
        let claims = AccessTokenClaims(
            issuerID: payload.iss, userID: payload.sub, deviceID: payload.dev,
            issuedAt: Date(timeIntervalSince1970: TimeInterval(payload.iat)),
            expiresAt: Date(timeIntervalSince1970: TimeInterval(payload.exp)))
        guard now < claims.expiresAt else {
            throw TSPError(
                .unauthenticated,
                "the access token expired at \(claims.expiresAt.formatted(.iso8601)); log in again for a new one")
        }
        return claims
    }
}
