import TokenetRPC
import TokenetWire

/// `tokenet.issuer.v1.IssuerEnrolment`: an operator at the issuer backend enrols accounts and unlocks credentials.
struct IssuerEnrolmentService: IssuerV1.IssuerEnrolment.ServiceProtocol {
    let backend: IssuerEnrolmentBackend

    func enroll(_ request: IssuerV1.EnrollRequest, context: ServerContext) async throws -> IssuerV1.EnrollResponse {
        try await IssuerError.mapping { () async throws(IssuerError) in
            try await backend.enroll(userID: request.userID, accountID: request.accountID)
        }
    }

    func unlockCredentials(_ request: IssuerV1.UnlockRequest, context: ServerContext) async throws
        -> IssuerV1.UnlockResponse
    {
        try await IssuerError.mapping { () async throws(IssuerError) in
            try await backend.unlock(userID: request.userID, accountID: request.accountID)
        }
    }
}

/// `tokenet.issuer.v1.IssuerAppAuth`: the simulated issuer app, driven by an operator.
struct IssuerAppAuthService: IssuerV1.IssuerAppAuth.ServiceProtocol {
    let app: IssuerAppAuthenticator

    func activate(_ request: IssuerV1.AppActivateRequest, context: ServerContext) async throws
        -> IssuerV1.AppActivateResponse
    {
        try await IssuerError.mapping { () async throws(IssuerError) in
            try await app.activate(
                code: request.activationCode, referenceID: request.referenceID, displayName: request.displayName,
                pin: request.pin, link: request.link)
        }
    }

    func accounts(_ request: IssuerV1.AppAccountsRequest, context: ServerContext) async throws
        -> IssuerV1.AppAccountsResponse
    {
        try await IssuerError.mapping { () async throws(IssuerError) in try app.accounts(userID: request.userID) }
    }

    func activateLinked(_ request: IssuerV1.ActivateLinkedRequest, context: ServerContext) async throws
        -> IssuerV1.ActivateLinkedResponse
    {
        try await IssuerError.mapping { () async throws(IssuerError) in
            try await app.activateLinked(userID: request.userID, pin: request.pin)
        }
    }

    func login(_ request: IssuerV1.AppLoginRequest, context: ServerContext) async throws -> IssuerV1.AppLoginResponse {
        try await IssuerError.mapping { () async throws(IssuerError) in
            try await app.login(userID: request.userID, pin: request.pin)
        }
    }

    func deleteAccount(_ request: IssuerV1.AppDeleteAccountRequest, context: ServerContext) async throws
        -> IssuerV1.AppDeleteAccountResponse
    {
        try await IssuerError.mapping { () async throws(IssuerError) in
            IssuerV1.AppDeleteAccountResponse(
                accountsLeft: UInt32(
                    try await app.deleteAccount(userID: request.userID, accountID: request.accountID, pin: request.pin)
                ))
        }
    }
}
