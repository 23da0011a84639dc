/// How the issuer app signs its cardholder in before it acts for them (the in-app ID&V activation): the
/// strong-authentication login, which computes HOTP codes from the user's and the device's credentials and returns
/// the TSP's access token. A protocol so that the app-to-app flow can be tested with a fake.
public protocol CardholderLogin: Sendable {
    /// An access token for `userID` (the issuer's id for the cardholder, e.g. "ch-alice"), signing in with the PIN
    /// the cardholder typed into the app (it unlocks the user credential). Throws an `IssuerError` that says why the
    /// cardholder could not be signed in (not enrolled, wrong PIN, credential locked, TSP unreachable).
    func accessToken(forUser userID: String, pin: String) async throws(IssuerError) -> String
}
