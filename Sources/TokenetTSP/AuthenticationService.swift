import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.tsp.v1.Authentication`: the issuer app activates accounts into HOTP credentials and logs in with them.
/// Codes and secrets are never logged.
struct AuthenticationService: TspV1.Authentication.ServiceProtocol {
    /// The most accounts one bulk call (or one enrolment registration) may name.
    static let maxBulk = 100

    let tsp: TSPService

    func verifyActivation(_ request: TspV1.VerifyActivationRequest, context: ServerContext) async throws
        -> TspV1.VerifyActivationResponse
    {
        try await tsp.handling("VerifyActivation", context) { log in
            let issuerID = try tsp.callingIssuer(context)
            let response = try activate(request, issuerID: issuerID)
            log.info(
                "activation checked",
                ["ref": request.referenceID, "account": response.accountID, "result": resultName(response.result)])
            return response
        }
    }

    func verifyActivations(_ request: TspV1.VerifyActivationsRequest, context: ServerContext) async throws
        -> TspV1.VerifyActivationsResponse
    {
        try await tsp.handling("VerifyActivations", context) { log in
            let issuerID = try tsp.callingIssuer(context)
            guard (1...AuthenticationService.maxBulk).contains(request.activations.count) else {
                throw TSPError(
                    .invalidArgument,
                    "activations must hold 1 to \(AuthenticationService.maxBulk) activations, not "
                        + "\(request.activations.count)")
            }
            // Every entry is checked before any is activated: each activation commits on its own and replaces the
            // account's credentials, so one refused halfway lost the credentials of those before it with the call.
            for (index, activation) in request.activations.enumerated() {
                do throws(TSPError) {
                    try Self.check(activation)
                } catch {
                    throw TSPError(
                        error.code, "activations[\(index)]: \(error.message); no account of this call was activated")
                }
            }
            var response = TspV1.VerifyActivationsResponse()
            for activation in request.activations {
                response.results.append(try activate(activation, issuerID: issuerID))
            }
            let succeeded = response.results.filter { $0.result == .success }.count
            log.info(
                "bulk activation checked", ["accounts": "\(response.results.count)", "succeeded": "\(succeeded)"])
            return response
        }
    }

    func login(_ request: TspV1.LoginRequest, context: ServerContext) async throws -> TspV1.LoginResponse {
        try await tsp.handling("Login", context) { log in
            let issuerID = try tsp.callingIssuer(context)
            for (field, value) in [
                ("user_credential_id", request.userCredentialID), ("user_code", request.userCode),
                ("device_credential_id", request.deviceCredentialID), ("device_code", request.deviceCode),
            ] where value.isEmpty {
                throw TSPError(.invalidArgument, "\(field) is required")
            }
            // A code that is not digits can be no credential's: refused without a try, as a malformed one-time or
            // activation code is (it counted as a wrong code towards the lock).
            for (field, code) in [("user_code", request.userCode), ("device_code", request.deviceCode)]
            where code.utf8.count > 10 || !code.utf8.allSatisfy({ (48...57).contains($0) }) {
                throw TSPError(
                    .invalidArgument,
                    "\(field) must be the decimal digits the credential shows (at most 10); no try was used")
            }
            let result = try tsp.authentication.login(
                issuerID: issuerID, userCredentialID: request.userCredentialID, userCode: request.userCode,
                deviceCredentialID: request.deviceCredentialID, deviceCode: request.deviceCode)
            var response = TspV1.LoginResponse()
            switch result.answer {
            case .accepted(let userID, _, let deviceID):
                response.result = .success
                response.accessToken = result.token ?? ""
                response.expiresAtMs = result.expiresAt?.unixMilliseconds ?? 0
                log.info("login succeeded", ["user": userID, "device": deviceID])
            case .refused(let credentialID, let outcome, let other):
                response.failedCredentialID = credentialID
                (response.result, response.failuresLeft, response.message) = Self.describe(outcome, credentialID)
                if let other {
                    response.message += "; also " + Self.describe(other.outcome, other.credentialID).2
                }
                if let other {
                    log.info(
                        "login refused",
                        [
                            "credential": credentialID,
                            "result": response.result.protoValueName ?? "\(response.result)",
                            "also_refused": other.credentialID,
                        ])
                } else {
                    log.info(
                        "login refused",
                        ["credential": credentialID, "result": response.result.protoValueName ?? "\(response.result)"])
                }
            }
            return response
        }
    }

    func resync(_ request: TspV1.ResyncRequest, context: ServerContext) async throws -> TspV1.ResyncResponse {
        try await tsp.handling("Resync", context) { log in
            let issuerID = try tsp.callingIssuer(context)
            guard !request.credentialID.isEmpty, !request.firstCode.isEmpty, !request.secondCode.isEmpty else {
                throw TSPError(.invalidArgument, "credential_id, first_code and second_code are required")
            }
            let outcome = try tsp.store.resync(
                issuerID: issuerID, credentialID: request.credentialID, first: request.firstCode,
                second: request.secondCode, policy: tsp.configuration.hotpPolicy, nowMs: tsp.nowMs)
            var response = TspV1.ResyncResponse()
            switch outcome {
            case .accepted:
                response.result = .success
                response.message = "the credential is synchronised again"
            case .locked:
                response.result = .credentialLocked
                response.message = "the credential is locked after repeated failures; ask the issuer to unlock it"
            case .incorrect(let left), .resyncRequired(let left):
                response.result = .incorrectCodes
                response.failuresLeft = UInt32(left)
                response.message =
                    "the codes are not two consecutive codes of this credential; \(Self.failures(left)) left before it locks"
            case .notLocked:
                throw TSPError(.internal, "a resynchronisation answered as an unlock")
            }
            log.info(
                "resync checked",
                ["credential": request.credentialID, "result": response.result.protoValueName ?? "\(response.result)"])
            return response
        }
    }

    func removeCredentials(_ request: TspV1.RemoveCredentialsRequest, context: ServerContext) async throws
        -> TspV1.RemoveCredentialsResponse
    {
        try await tsp.handling("RemoveCredentials", context) { log in
            let issuerID = try tsp.callingIssuer(context)
            guard !request.userCredentialID.isEmpty, !request.deviceCredentialID.isEmpty else {
                throw TSPError(.invalidArgument, "user_credential_id and device_credential_id are required")
            }
            let removed = try tsp.store.removeCredentials(
                issuerID: issuerID, user: request.userCredentialID, device: request.deviceCredentialID)
            log.info(
                "credentials removed",
                [
                    "user_credential": request.userCredentialID, "device_credential": request.deviceCredentialID,
                    "removed": "\(removed)",
                ])
            return TspV1.RemoveCredentialsResponse(removed: UInt32(removed))
        }
    }

    /// The longest reference id taken: the TSP's are "ref-" and 16 characters.
    static let maxReferenceIDLength = 64

    /// Refuses what cannot be an activation, before any enrolment is looked up.
    static func check(_ request: TspV1.VerifyActivationRequest) throws(TSPError) {
        guard !request.referenceID.isEmpty, !request.activationCode.isEmpty else {
            throw TSPError(.invalidArgument, "activation_code and reference_id are required")
        }
        // What cannot be a reference id or a code is refused before the enrolment is looked up: it uses none of the
        // code's tries (as a one-time code that is not six digits uses none), and a long value is not echoed back.
        guard request.referenceID.utf8.count <= Self.maxReferenceIDLength, request.referenceID.hasPrefix("ref-") else {
            throw TSPError(
                .invalidArgument,
                "reference_id is not one the TSP gives (\"ref-\" and up to \(Self.maxReferenceIDLength) "
                    + "characters); use the reference id of the enrolment's activation")
        }
        let code = ActivationCode.normalized(request.activationCode)
        guard code.count == TSPAuthentication.activationCodeLength,
            code.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) })
        else {
            throw TSPError(
                .invalidArgument,
                "activation_code is not an activation code (\(TSPAuthentication.activationCodeLength) letters and "
                    + "digits, spaces and dashes ignored); no try was used")
        }
        // Kept in the clear with the credentials: a card number in it would be card data outside the vault.
        let shownName = maskPAN(request.displayName)
        guard shownName == request.displayName else {
            throw TSPError(
                .invalidArgument,
                "display_name holds a card number ('\(shownName)'); name the account without it; no try was used")
        }
    }

    private func activate(_ request: TspV1.VerifyActivationRequest, issuerID: String) throws
        -> TspV1.VerifyActivationResponse
    {
        try Self.check(request)
        var response = TspV1.VerifyActivationResponse(referenceID: request.referenceID)
        let displayName = request.displayName.isEmpty ? "account" : String(request.displayName.prefix(64))
        switch try tsp.authentication.activate(
            issuerID: issuerID, referenceID: request.referenceID, code: request.activationCode,
            displayName: displayName)
        {
        case .unknownReference:
            response.result = .unknownReference
            response.message =
                "no enrolment has reference id \"\(request.referenceID)\"; check it, or ask the issuer to enrol again"
        case .activated(let userID, let accountID, let user, let device):
            response.result = .success
            response.userID = userID
            response.accountID = accountID
            response.userCredential = Self.wire(user)
            response.deviceCredential = Self.wire(device)
            response.message = "account \(accountID) is activated"
        case .refused(let userID, let accountID, let outcome):
            response.userID = userID
            response.accountID = accountID
            switch outcome {
            case .incorrect(let left):
                response.result = .incorrectCode
                response.triesLeft = UInt32(left)
                response.message =
                    "the activation code is not correct; \(left == 1 ? "1 try" : "\(left) tries") left"
            case .expired:
                response.result = .expiredCode
                response.message =
                    "the activation code expired or was replaced by a newer one; ask the issuer for a new code"
            case .retriesExceeded:
                response.result = .retriesExceeded
                response.message = "too many wrong activation codes; ask the issuer to enrol the account again"
            case .alreadyUsed:
                response.result = .alreadyUsed
                // Said as it stands: after RemoveCredentials the account is no longer activated, and the code used
                // for it cannot activate it again.
                response.message =
                    try tsp.store.holdsCredentials(issuerID: issuerID, userID: userID, accountID: accountID)
                    ? "the activation code was already used; the account is activated"
                    : "the activation code was already used, and the account's credentials were removed since; ask "
                        + "the issuer to enrol the account again for a new code"
            case .activate:
                throw TSPError(.internal, "an activation answered without credentials")
            }
        }
        return response
    }

    static func wire(_ credential: ProvisionedCredential) -> TspV1.HotpCredential {
        TspV1.HotpCredential(
            credentialID: credential.id, secret: Data(credential.secret), algorithm: .sha1,
            digits: UInt32(credential.digits), counter: credential.counter)
    }

    static func describe(_ outcome: HOTPVerifierStateMachine.Outcome, _ credentialID: String) -> (
        TspV1.LoginResult, UInt32, String
    ) {
        switch outcome {
        case .incorrect(let left):
            return (
                .incorrectCode, UInt32(left), "the code of \(credentialID) is not correct; \(Self.failures(left)) left"
            )
        case .resyncRequired(let left):
            return (
                .resyncRequired, UInt32(left),
                "the code of \(credentialID) is ahead of the expected window; resynchronise with two consecutive codes"
            )
        case .locked, .notLocked, .accepted:
            return (
                .credentialLocked, 0,
                "credential \(credentialID) is locked after repeated failures; ask the issuer to unlock it"
            )
        }
    }

    private func resultName(_ result: TspV1.ActivationResult) -> String {
        result.protoValueName ?? "\(result)"
    }

    /// "1 failure", "3 failures".
    static func failures(_ count: some BinaryInteger) -> String { count == 1 ? "1 failure" : "\(count) failures" }
}
