import TokenetRPC
import TokenetWire

/// In-app ID&V: the issuer app signed the cardholder in and presents their access token. The TSP trusts the
/// issuer node for nothing here but the transport: the access token must be genuine and current, and its user must
/// own the issuer account the token's card belongs to.
extension IssuerIdvService {
    func activateDigitalCard(_ request: TspV1.ActivateDigitalCardRequest, context: ServerContext) async throws
        -> TspV1.ActivateDigitalCardResponse
    {
        try await tsp.handling("ActivateDigitalCard", context) { log in
            try await tsp.expireAbandonedStepUps(traceID: context.traceID, log: log)
            guard !request.digitalCardID.isEmpty else {
                throw TSPError(.invalidArgument, "digital_card_id is required")
            }
            guard !request.accessToken.isEmpty else {
                throw TSPError(.invalidArgument, "access_token is required: sign the cardholder in first")
            }
            guard let verifier = tsp.accessTokenVerifier else {
                throw TSPError(
                    .failedPrecondition,
                    "in-app activation needs the authentication service, which this token service does not run; "
                        + "use another ID&V method")
            }
            let claims = try verifier.verify(request.accessToken, now: tsp.now())
            guard let token = try tsp.store.token(request.digitalCardID) else {
                throw TSPError.unknownToken(request.digitalCardID)
            }
            let nodeID = context.peer?.nodeID
            guard try tsp.store.issuers().contains(where: { $0.id == token.issuerID && $0.peerNodeID == nodeID })
            else {
                throw TSPError(
                    .permissionDenied, "token \"\(token.digitalCardID)\" belongs to another issuer's card")
            }
            try Self.requireOwnership(claims, of: token, verifier: verifier)
            let change = try await tsp.stateChanges.run {
                try await tsp.expireAbandonedStepUpsInTurn(traceID: context.traceID, log: log)
                // Read again in turn, as `activateToken` does: a repeat changes nothing and notifies no one.
                let before = try tsp.store.token(token.digitalCardID) ?? token
                // The issuer app also answers the wallet directly; the broker's copy reaches it even if that fails.
                let journaled = try tsp.store.activateToken(
                    digitalCardID: token.digitalCardID,
                    actor: TokenActor.issuerApp(token.issuerID, user: claims.userID),
                    reason: "in-app ID&V: the cardholder signed in to the issuer app (device \(claims.deviceID))",
                    traceID: context.traceID, nowMs: tsp.nowMs,
                    announce: { activated in
                        TSPService.cardState(
                            TokenStateChange(before: before, after: activated), reason: "IDV_APP_TO_APP",
                            initiator: "issuer")
                    })
                let activated = journaled.value
                log.info(
                    "token activated in the issuer app",
                    [
                        "digital_card_id": token.digitalCardID, "user": claims.userID,
                        "changed": "\(before.state != activated.state)",
                    ])
                return TokenStateChange(before: before, after: await tsp.published(journaled, log: log))
            }
            return TspV1.ActivateDigitalCardResponse(
                tokenState: change.after.state.wire, changed: change.before.state != change.after.state,
                stateVersion: change.after.stateVersion)
        }
    }

    /// The signed-in user may act on this card: the access token is the token's issuer's, the issuer named the
    /// card's account when it decided, and the user owns that account. A genuine access token that fails this is
    /// PERMISSION_DENIED, not UNAUTHENTICATED: the cardholder is known, just not allowed this card.
    static func requireOwnership(
        _ claims: AccessTokenClaims, of token: TokenRecord, verifier: any AccessTokenVerifier
    ) throws(TSPError) {
        guard claims.issuerID == token.issuerID else {
            throw TSPError(
                .permissionDenied,
                "the access token was issued by \"\(claims.issuerID)\", but token \"\(token.digitalCardID)\" is a "
                    + "card of \"\(token.issuerID)\"")
        }
        guard let accountID = token.issuerAccountID, !accountID.isEmpty else {
            throw TSPError(
                .failedPrecondition,
                "the issuer did not name the account of token \"\(token.digitalCardID)\" when it decided, so its "
                    + "owner cannot be checked; use another ID&V method")
        }
        guard try verifier.user(claims.userID, ofIssuer: claims.issuerID, ownsAccount: accountID) else {
            throw TSPError(
                .permissionDenied,
                "user \"\(claims.userID)\" does not own the account of token \"\(token.digitalCardID)\", or holds it "
                    + "with credentials locked after too many wrong codes (the issuer unlocks them)")
        }
    }
}
