import Foundation

/// What a valid access token says: the issuer's user it was issued to, on which device, until when.
///
/// The authentication service issues the token at login (HOTP codes from the user's and the device's credentials);
/// the in-app ID&V path presents it to `ActivateDigitalCard`, which must know whose it is before it activates a card.
public struct AccessTokenClaims: Sendable, Equatable {
    /// The issuer that enrolled the user (its id as registered with the TSP, e.g. "tokenet-bank").
    public var issuerID: String
    /// The issuer's id for the user (e.g. "ch-alice").
    public var userID: String
    /// The device the user logged in from (the device credential's id).
    public var deviceID: String
    public var issuedAt: Date
    public var expiresAt: Date

    public init(issuerID: String, userID: String, deviceID: String, issuedAt: Date, expiresAt: Date) {
        self.issuerID = issuerID
        self.userID = userID
        self.deviceID = deviceID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// Checks access tokens for the TSP's own services. The authentication service implements it; `ActivateDigitalCard`
/// depends only on this protocol so that it can be tested with a fake.
public protocol AccessTokenVerifier: Sendable {
    /// The claims of a token that is well formed, carries the TSP's signature and has not expired at `now`.
    /// Anything else throws `TSPError(.unauthenticated, …)` with a message that says which check failed.
    func verify(_ token: String, now: Date) throws(TSPError) -> AccessTokenClaims

    /// Whether the issuer enrolled `accountID` for `userID`: the ownership check made before acting on a card of
    /// that account.
    func user(_ userID: String, ofIssuer issuerID: String, ownsAccount accountID: String) throws(TSPError) -> Bool
}
