import Foundation
import Synchronization
import TokenetCard
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// A TSP's Enrolment and Authentication services reduced to what the issuer relies on: codes per reference, HOTP
/// credentials checked at exactly the next counter, and a record of what was called.
final class FakeTSPAuth: Sendable {
    struct State {
        var enrolments: [String: (user: String, account: String, code: String, used: Bool)] = [:]
        /// How long an activation code lasts from `Support.now` (the TSP's `activation_code_ttl_s`).
        var activationLifetimeMs: UInt64 = 3_600_000
        var counters: [String: UInt64] = [:]
        var secrets: [String: [UInt8]] = [:]
        /// Accounts whose activation the fake refuses with INCORRECT_CODE.
        var refusing: Set<String> = []
        /// References whose code the TSP reports expired (replaced by a newer one, as activate-linked does).
        var expiring: Set<String> = []
        var verifyCalls = 0
        var unlocks = 0
        /// Answers UnlockCredentials with UNAVAILABLE, as a TSP that is down.
        var unlockDown = false
        /// Answers RemoveCredentials with UNAVAILABLE, as a TSP that is down.
        var removeDown = false
        var logins = 0
        var resyncs = 0
        /// What every resync is answered, instead of checking its codes.
        var resyncAnswer: TspV1.ResyncResponse?
        var next = 0
        /// Holds the first login that arrives for up to a second, or until a second one arrives and is answered
        /// first: the order two logins sent at once may reach a TSP in.
        /// Answers no login for a minute, as a TSP that hangs.
        var hangLogins = false
        var holdFirstLogin = false
        var held = 0
        /// Logins answered while another was held.
        var overtaking = 0
        /// Holds the answer of the next activation (decided, and its code used, before it waits) at this gate.
        var holdNextActivation: Gate?
        /// Holds the next RemoveCredentials at this gate before it removes anything.
        var holdNextRemoval: Gate?
    }

    let state = Mutex(State())

    var router: RPCRouter {
        var router = RPCRouter()
        Enrolment(fake: self).register(on: &router)
        Authentication(fake: self).register(on: &router)
        return router
    }

    struct Enrolment: TspV1.Enrolment.ServiceProtocol {
        let fake: FakeTSPAuth

        func registerEnrolment(_ request: TspV1.RegisterEnrolmentRequest, context: ServerContext) async throws
            -> TspV1.RegisterEnrolmentResponse
        {
            fake.state.withLock { state in
                TspV1.RegisterEnrolmentResponse(
                    activations: request.accountIds.map { account in
                        state.next += 1
                        let reference = "ref-\(state.next)"
                        let code = "CODE\(state.next)XYZ"
                        state.enrolments[reference] = (request.userID, account, code, false)
                        return TspV1.Activation(
                            accountID: account, activationCode: code, referenceID: reference,
                            activationURL: "tokenet://tsp", expiresAtMs: 1_790_000_000_000 + state.activationLifetimeMs,
                            attempts: 5)
                    })
            }
        }

        func unlockCredentials(_ request: TspV1.UnlockCredentialsRequest, context: ServerContext) async throws
            -> TspV1.UnlockCredentialsResponse
        {
            guard !fake.state.withLock({ $0.unlockDown }) else { throw RPCError(.unavailable, "connection refused") }
            fake.state.withLock { $0.unlocks += 1 }
            return TspV1.UnlockCredentialsResponse(unlocked: 1)
        }
    }

    struct Authentication: TspV1.Authentication.ServiceProtocol {
        let fake: FakeTSPAuth

        func verifyActivation(_ request: TspV1.VerifyActivationRequest, context: ServerContext) async throws
            -> TspV1.VerifyActivationResponse
        {
            let (response, gate) = fake.state.withLock { state in
                state.verifyCalls += 1
                defer { state.holdNextActivation = nil }
                return (Self.verify(request, &state), state.holdNextActivation)
            }
            await gate?.pass()
            return response
        }

        func verifyActivations(_ request: TspV1.VerifyActivationsRequest, context: ServerContext) async throws
            -> TspV1.VerifyActivationsResponse
        {
            fake.state.withLock { state in
                state.verifyCalls += 1
                return TspV1.VerifyActivationsResponse(results: request.activations.map { Self.verify($0, &state) })
            }
        }

        static func verify(_ request: TspV1.VerifyActivationRequest, _ state: inout State)
            -> TspV1.VerifyActivationResponse
        {
            guard let enrolment = state.enrolments[request.referenceID] else {
                return .init(result: .unknownReference, referenceID: request.referenceID)
            }
            var response = TspV1.VerifyActivationResponse(
                referenceID: request.referenceID, userID: enrolment.user, accountID: enrolment.account)
            if enrolment.used {
                response.result = .alreadyUsed
            } else if state.expiring.contains(request.referenceID) {
                response.result = .expiredCode
                response.message =
                    "the activation code expired or was replaced by a newer one; ask the issuer for a new code"
            } else if enrolment.code != request.activationCode || state.refusing.contains(enrolment.account) {
                response.result = .incorrectCode
                response.triesLeft = 4
                response.message = "the activation code is not correct"
            } else {
                state.enrolments[request.referenceID]?.used = true
                response.result = .success
                response.userCredential = credential("uc-\(request.referenceID)", &state)
                response.deviceCredential = credential("dc-\(request.referenceID)", &state)
            }
            return response
        }

        static func credential(_ id: String, _ state: inout State) -> TspV1.HotpCredential {
            let secret = (0..<20).map { _ in UInt8.random(in: 0...255) }
            state.secrets[id] = secret
            state.counters[id] = 0
            return TspV1.HotpCredential(credentialID: id, secret: Data(secret), algorithm: .sha1, digits: 6, counter: 0)
        }

        func login(_ request: TspV1.LoginRequest, context: ServerContext) async throws -> TspV1.LoginResponse {
            if fake.state.withLock({ $0.hangLogins }) { try await Task.sleep(for: .seconds(60)) }
            let hold = fake.state.withLock { state in
                defer { state.holdFirstLogin = false }
                if state.held > 0 { state.overtaking += 1 }
                return state.holdFirstLogin
            }
            if hold {
                fake.state.withLock { $0.held += 1 }
                for _ in 0..<100 where fake.state.withLock({ $0.overtaking }) == 0 {
                    try await Task.sleep(for: .milliseconds(10))
                }
                fake.state.withLock { $0.held -= 1 }
            }
            return try fake.state.withLock { state in
                state.logins += 1
                for (id, code) in [
                    (request.userCredentialID, request.userCode), (request.deviceCredentialID, request.deviceCode),
                ] {
                    guard let secret = state.secrets[id], let counter = state.counters[id] else {
                        // As the TSP words it (`TSPStore+Auth`).
                        throw RPCError(
                            .notFound, "no credential of this issuer has id \"\(id)\"; activate the account again")
                    }
                    let hotp = try HOTP(secret: secret)
                    // Look-ahead 10; a code further ahead (within 100) asks for a resync.
                    if let match = try (counter..<(counter + 10)).first(where: { try hotp.code(counter: $0) == code }) {
                        state.counters[id] = match + 1
                    } else if try (counter..<(counter + 100)).contains(where: { try hotp.code(counter: $0) == code }) {
                        return .init(result: .resyncRequired, failedCredentialID: id, failuresLeft: 9)
                    } else {
                        return .init(result: .incorrectCode, failedCredentialID: id, failuresLeft: 9, message: "wrong")
                    }
                }
                return .init(
                    result: .success, accessToken: "at1.token-for-\(request.deviceCredentialID)", expiresAtMs: 1)
            }
        }

        func removeCredentials(_ request: TspV1.RemoveCredentialsRequest, context: ServerContext) async throws
            -> TspV1.RemoveCredentialsResponse
        {
            let gate = fake.state.withLock { state in
                defer { state.holdNextRemoval = nil }
                return state.holdNextRemoval
            }
            await gate?.pass()
            return try fake.state.withLock { state in
                guard !state.removeDown else { throw RPCError(.unavailable, "connection refused") }
                var removed: UInt32 = 0
                for id in [request.userCredentialID, request.deviceCredentialID]
                where state.secrets.removeValue(forKey: id) != nil {
                    state.counters[id] = nil
                    removed += 1
                }
                return .init(removed: removed)
            }
        }

        func resync(_ request: TspV1.ResyncRequest, context: ServerContext) async throws -> TspV1.ResyncResponse {
            try fake.state.withLock { state in
                state.resyncs += 1
                if let answer = state.resyncAnswer { return answer }
                guard let secret = state.secrets[request.credentialID],
                    let counter = state.counters[request.credentialID]
                else { throw RPCError(.notFound, "no credential") }
                let hotp = try HOTP(secret: secret)
                for candidate in counter..<(counter + 100)
                where try hotp.code(counter: candidate) == request.firstCode
                    && hotp.code(counter: candidate + 1) == request.secondCode
                {
                    state.counters[request.credentialID] = candidate + 2
                    return .init(result: .success)
                }
                return .init(result: .incorrectCodes)
            }
        }
    }
}
