import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.tsp.v1.Enrolment`: the issuer backend registers enrolments for its users' accounts and unlocks their
/// credentials. Activation codes are returned to the issuer once and never logged.
struct EnrolmentService: TspV1.Enrolment.ServiceProtocol {
    let tsp: TSPService

    /// The longest user or account id taken: they are the issuer's own ids, stored and echoed in answers and logs.
    static let maxIDLength = 128

    func registerEnrolment(_ request: TspV1.RegisterEnrolmentRequest, context: ServerContext) async throws
        -> TspV1.RegisterEnrolmentResponse
    {
        try await tsp.handling("RegisterEnrolment", context) { log in
            let issuerID = try tsp.callingIssuer(context)
            guard !request.userID.isEmpty else { throw TSPError(.invalidArgument, "user_id is required") }
            guard (1...AuthenticationService.maxBulk).contains(request.accountIds.count),
                !request.accountIds.contains(where: \.isEmpty)
            else {
                throw TSPError(
                    .invalidArgument,
                    "account_ids must name 1 to \(AuthenticationService.maxBulk) accounts, none of them empty")
            }
            // An account named twice got two activations, the first dead on arrival (replaced by the second).
            guard Set(request.accountIds).count == request.accountIds.count else {
                throw TSPError(.invalidArgument, "account_ids names an account twice; name each account once")
            }
            let ids =
                [("user_id", request.userID)]
                + request.accountIds.enumerated().map { ("account_ids[\($0.offset)]", $0.element) }
            for (field, value) in ids {
                guard value.utf8.count <= Self.maxIDLength else {
                    throw TSPError(
                        .invalidArgument,
                        "\(field) holds an id of \(value.utf8.count) bytes; at most \(Self.maxIDLength)")
                }
                // Stored, answered and logged in full, and shown by the issuer app.
                if let problem = IdentifierRules.problem(value, maxLength: Self.maxIDLength, spaces: true) {
                    throw TSPError(.invalidArgument, "\(field) must be \(problem)")
                }
            }
            // One owner per account: a second user enrolled for an account already activated by another held
            // credentials beside the first, and could activate the owner's tokens in-app (its sign-in proves the
            // account). The issuer moves an account by removing the holder's credentials first. A pending
            // enrolment of another user is replaced by this one (`registerEnrolment`), so no two can be activated.
            for accountID in request.accountIds {
                if let holder = try tsp.store.otherHolder(
                    issuerID: issuerID, accountID: accountID, than: request.userID)
                {
                    throw TSPError.accountHeld(accountID, by: holder, for: request.userID)
                }
            }
            var response = TspV1.RegisterEnrolmentResponse()
            for activation in try tsp.authentication.register(
                issuerID: issuerID, userID: request.userID, accountIDs: request.accountIds)
            {
                let accountID = activation.accountID
                response.activations.append(
                    TspV1.Activation(
                        accountID: accountID, activationCode: activation.code, referenceID: activation.referenceID,
                        activationURL: tsp.configuration.authServerURL, expiresAtMs: activation.expiresAtMs,
                        attempts: UInt32(tsp.configuration.activationMaxAttempts)))
                log.info(
                    "enrolment registered",
                    ["issuer": issuerID, "user": request.userID, "account": accountID, "ref": activation.referenceID])
            }
            return response
        }
    }

    func unlockCredentials(_ request: TspV1.UnlockCredentialsRequest, context: ServerContext) async throws
        -> TspV1.UnlockCredentialsResponse
    {
        try await tsp.handling("UnlockCredentials", context) { log in
            let issuerID = try tsp.callingIssuer(context)
            guard !request.userID.isEmpty else { throw TSPError(.invalidArgument, "user_id is required") }
            let unlocked = try tsp.store.unlockCredentials(
                issuerID: issuerID, userID: request.userID,
                accountID: request.accountID.isEmpty ? nil : request.accountID, nowMs: tsp.nowMs)
            log.info("credentials unlocked", ["user": request.userID, "unlocked": "\(unlocked)"])
            return TspV1.UnlockCredentialsResponse(unlocked: UInt32(unlocked))
        }
    }
}

extension TSPError {
    /// FAILED_PRECONDITION for an account another user holds credentials for (active or locked): an account has one
    /// owner, whom in-app ID&V checks against.
    static func accountHeld(_ accountID: String, by holder: String, for userID: String) -> TSPError {
        TSPError(
            .failedPrecondition,
            "account \(accountID) is enrolled to user \(holder), who holds credentials for it: an account has one "
                + "owner; remove \(holder)'s credentials for it first (Authentication/RemoveCredentials), then enrol "
                + "it for \(userID)")
    }
}
