import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetIssuer

/// A TSP that records the call centre's and the issuer app's activations and answers like the real one.
final class FakeTSPIdv: TspV1.IssuerIdv.ServiceProtocol {
    let requests = Mutex<[TspV1.ActivateTokenRequest]>([])
    let inApp = Mutex<[TspV1.ActivateDigitalCardRequest]>([])
    /// When set, ActivateDigitalCard fails with it.
    let inAppRefusal = Mutex<RPCError?>(nil)

    func activateDigitalCard(_ request: TspV1.ActivateDigitalCardRequest, context: ServerContext) async throws
        -> TspV1.ActivateDigitalCardResponse
    {
        let (first, refusal) = inApp.withLock { requests in
            requests.append(request)
            return (requests.count == 1, inAppRefusal.withLock { $0 })
        }
        if let refusal { throw refusal }
        return TspV1.ActivateDigitalCardResponse(tokenState: .active, changed: first, stateVersion: 2)
    }

    func activateToken(_ request: TspV1.ActivateTokenRequest, context: ServerContext) async throws
        -> TspV1.ActivateTokenResponse
    {
        let first = requests.withLock { requests in
            requests.append(request)
            return requests.count == 1
        }
        return TspV1.ActivateTokenResponse(tokenState: .active, changed: first)
    }
}

/// Code delivery through the outbox and call-centre activation, over in-memory connections.
@Suite struct IssuerOtpTests {
    static let token = "DNITHE000000000054"
    let sink = MemoryLogSink()
    let tsp = FakeTSPIdv()
    let party: IssuerParty
    let otp: IssuerV1.IssuerOtp.Client
    let callCentre: IssuerV1.IssuerCallCentre.Client

    init() throws {
        var tspRouter = RPCRouter()
        tsp.register(on: &tspRouter)
        party = try Support.party(tsp: Support.connect(tspRouter, as: .issuer), sink: sink)
        var router = Support.router(party)
        party.otp.register(on: &router)
        party.callCentre.register(on: &router)
        otp = IssuerV1.IssuerOtp.Client(Support.connect(router, as: .tsp))
        callCentre = IssuerV1.IssuerCallCentre.Client(Support.connect(router, as: .operator))
        // The issuer learns which card a token is for when it decides the digitization.
        var request = IssuerV1.AuthorizeDigitizationRequest()
        request.encryptedCardData = try Support.encrypted(
            Cards.visaStepUp.1, expiry: Cards.visaStepUp.2, to: try Support.issuerKey())
        request.digitalCardID = Self.token
        request.tokenLast4 = "4321"
        request.walletAccountID = "wallet-account-1"
        request.device = CardV1.DeviceInfo(deviceID: "device-1", deviceType: "PHONE")
        let decisions = IssuerV1.IssuerDecisions.Client(Support.connect(router, as: .tsp))
        decisionTask = Task { try await decisions.authorizeDigitization(request) }
    }

    let decisionTask: Task<IssuerV1.AuthorizeDigitizationResponse, any Error>

    /// Sends a code by the issuer's method of `type` (named by its id, or by `methodID`), expiring `expiresInMs`
    /// from now.
    func send(
        _ type: CardV1.IdvMethodType, code: String = "482913", token: String = token, methodID: String? = nil,
        expiresInMs: Int64 = 600_000
    ) async throws -> IssuerV1.SendOtpResponse {
        let id = methodID ?? (type == .otpEmail ? "otp-email" : "otp-sms")
        let expiry = Int64(Support.now.timeIntervalSince1970 * 1000) + expiresInMs
        return try await otp.sendOTP(
            IssuerV1.SendOtpRequest(
                digitalCardID: token, methodID: id, type: type, code: code, expiresAtMs: UInt64(max(0, expiry))))
    }

    @Test func codesGoToTheOutboxMaskedAndUnlogged() async throws {
        #expect(try await decisionTask.value.decision == .requireAdditionalAuthentication)
        let sms = try await send(.otpSms)
        #expect(sms.maskedDestination.hasPrefix("***-***-"))
        let email = try await send(.otpEmail, code: "771204")
        #expect(email.maskedDestination.contains("***@"))
        let outbox = try await callCentre.outbox(IssuerV1.OutboxRequest()).messages
        #expect(outbox.map(\.channel) == ["sms", "email"])
        #expect(outbox.map(\.maskedDestination) == [sms.maskedDestination, email.maskedDestination])
        #expect(outbox[0].text.contains("482913") && outbox[0].text.contains("ending 0054"))
        #expect(outbox[0].text.contains("expires in 10 minutes"))
        #expect(outbox[1].text.contains("771204"))
        #expect(outbox.allSatisfy { $0.digitalCardID == Self.token })
        #expect(try await callCentre.outbox(IssuerV1.OutboxRequest(digitalCardID: "other")).messages.isEmpty)
        #expect(!sink.lines.contains { $0.contains("482913") || $0.contains("771204") })
        // A code already expired is sent (a TSP with a code lifetime of a millisecond tests its refusal), and its
        // message says so: it read "It expires in 1 second".
        _ = try await send(.otpSms, code: "550055", expiresInMs: -1_000)
        let late = try #require(try await callCentre.outbox(IssuerV1.OutboxRequest()).messages.last)
        #expect(late.text.contains("550055. It had already expired when it was sent."), "\(late.text)")
    }

    @Test func badDeliveriesAreRefused() async throws {
        _ = try await decisionTask.value
        let unknown = await Support.rpcError { _ = try await send(.otpSms, token: "DNITHE-unknown") }
        #expect(unknown?.code == .notFound)
        let callCenter = await Support.rpcError { _ = try await send(.callCenter) }
        #expect(callCenter?.code == .invalidArgument)
        let badCode = await Support.rpcError { _ = try await send(.otpSms, code: "12a") }
        #expect(badCode?.code == .invalidArgument)
        // A card number sent as a code would reach the cardholder's message and the outbox in clear.
        let longCode = await Support.rpcError { _ = try await send(.otpSms, code: "4111111111111111") }
        #expect(longCode?.code == .invalidArgument && longCode?.message == "code must be four to ten decimal digits")
        // Only by a method the issuer offered, named by its id, and for a code that has not expired: each was sent.
        let unknownMethod = await Support.rpcError { _ = try await send(.otpSms, methodID: "nope") }
        #expect(unknownMethod?.code == .invalidArgument)
        #expect(unknownMethod?.message.contains("method_id \"nope\" is not the issuer's OTP_SMS method") == true)
        let otherMethod = await Support.rpcError { _ = try await send(.otpEmail, methodID: "otp-sms") }
        #expect(otherMethod?.code == .invalidArgument)
        let noExpiry = await Support.rpcError {
            _ = try await send(.otpSms, expiresInMs: -Int64(Support.now.timeIntervalSince1970 * 1000))
        }
        #expect(noExpiry?.message.contains("expires_at_ms is required") == true)
        #expect(try await callCentre.outbox(IssuerV1.OutboxRequest()).messages.isEmpty)
    }

    /// A blocked card's tokens waiting for ID&V get no code and are not activated by the call centre.
    @Test func aBlockedCardsTokensGetNoCodeAndNoActivation() async throws {
        _ = try await decisionTask.value
        #expect(try party.store.setBlocked(cardID: Cards.visaStepUp.0, reason: "STOLEN", atMs: 1, tokens: nil))
        let code = await Support.rpcError { _ = try await send(.otpSms) }
        #expect(code?.code == .failedPrecondition)
        #expect(
            code?.message == "the card ending 0054 is blocked by the issuer (STOLEN): no code is sent for its tokens")
        #expect(try await callCentre.outbox(IssuerV1.OutboxRequest()).messages.isEmpty)
        let activation = await Support.rpcError {
            _ = try await callCentre.activateToken(IssuerV1.CallCentreActivateRequest(digitalCardID: Self.token))
        }
        #expect(activation?.code == .failedPrecondition && activation?.message.hasSuffix("are not activated") == true)
    }

    @Test func callCentreActivationGoesThroughTheTSP() async throws {
        _ = try await decisionTask.value
        let first = try await callCentre.activateToken(IssuerV1.CallCentreActivateRequest(digitalCardID: Self.token))
        #expect(first.tokenState == .active && first.changed)
        let again = try await callCentre.activateToken(IssuerV1.CallCentreActivateRequest(digitalCardID: Self.token))
        #expect(!again.changed)
        let sent = tsp.requests.withLock { $0 }
        #expect(sent.map(\.digitalCardID) == [Self.token, Self.token])
        #expect(sent.first?.reason == "issuer call centre verified the cardholder (operator operator-1)")
        let unknown = await Support.rpcError {
            _ = try await callCentre.activateToken(IssuerV1.CallCentreActivateRequest(digitalCardID: "DNITHE-x"))
        }
        #expect(unknown?.code == .notFound)
        #expect(unknown?.message.contains("not a token") == false)
        // The issuer's own card id, from the first column of `issuer cards`, is said to be one, with where the
        // token's id is; a wallet's card reference is named as one too.
        let cardID = await Support.rpcError {
            _ = try await callCentre.activateToken(.init(digitalCardID: "card-visa-approve"))
        }
        #expect(cardID?.code == .notFound)
        #expect(
            cardID?.message.contains(
                "card-visa-approve is one of this issuer's card ids, not a token: activate-token takes the digital card id"
            ) == true, "\(String(describing: cardID))")
        let walletRef = await Support.rpcError {
            _ = try await callCentre.activateToken(.init(digitalCardID: "card-3"))
        }
        #expect(
            walletRef?.message.contains(
                "card-3 is a wallet's card reference or an issuer card id this issuer lacks, not a token") == true)
        #expect(tsp.requests.withLock { $0.count } == 2)
    }

    /// Only the issuer's own TSP (the node its link leads to) asks for codes and decisions: any certificate of the
    /// CA with the tsp role passed the role check, and another such node had the issuer text a cardholder a code of
    /// its choosing.
    @Test func onlyTheIssuersOwnTSPMayAskForCodesAndDecisions() async throws {
        var tspRouter = RPCRouter()
        FakeTSPIdv().register(on: &tspRouter)
        let ownTSP = Support.connect(tspRouter, as: .issuer, server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        let party = try Support.party(tsp: ownTSP, sink: MemoryLogSink())
        var router = Support.router(party)
        party.otp.register(on: &router)
        let refusal = "this issuer works with the TSP node \"tsp-1\" (its --tsp), not \"tsp-2\""
        let otherOTP = IssuerV1.IssuerOtp.Client(Support.connect(router, as: .tsp, nodeID: "tsp-2"))
        let otherDecisions = IssuerV1.IssuerDecisions.Client(Support.connect(router, as: .tsp, nodeID: "tsp-2"))
        let refused = [
            await Support.rpcError {
                _ = try await otherOTP.sendOTP(
                    IssuerV1.SendOtpRequest(digitalCardID: Self.token, type: .otpSms, code: "111111"))
            },
            await Support.rpcError {
                _ = try await otherDecisions.authorizeDigitization(IssuerV1.AuthorizeDigitizationRequest())
            },
            await Support.rpcError {
                _ = try await otherDecisions.checkCardEligibility(IssuerV1.CardEligibilityRequest())
            },
        ]
        for error in refused {
            #expect(error?.code == .permissionDenied)
            #expect(error?.message.contains(refusal) == true, "\(String(describing: error))")
        }
        #expect(try party.store.outbox(digitalCardID: nil).isEmpty)
        // The issuer's own TSP gets past the check, to the request's own answer (a token it knows no card for).
        let ownOTP = IssuerV1.IssuerOtp.Client(Support.connect(router, as: .tsp, nodeID: "tsp-1"))
        let answered = await Support.rpcError {
            _ = try await ownOTP.sendOTP(
                IssuerV1.SendOtpRequest(digitalCardID: "DNITHE-unknown", type: .otpSms, code: "111111"))
        }
        #expect(answered?.code == .notFound, "\(String(describing: answered))")
    }

    /// The TSP the issuer registered with is kept in its store: after a restart, with the link down (the TSP away),
    /// another tsp-role node is still refused, where a memory of this run alone let any through.
    @Test func theRegisteredTSPIsRememberedAcrossARestart() async throws {
        let store = try Support.store()
        let memory = TSPLink.RegisteredTSPMemory(
            load: { () throws(IssuerError) in try store.registeredTSPNodeID() },
            save: { (id) throws(IssuerError) in try store.setRegisteredTSP(nodeID: id) })
        let tsp = FakeTSP(key: try Support.tspKey())
        let first = TSPLink(
            caller: Support.connect(tsp.router, as: .issuer, server: PeerIdentity(role: .tsp, nodeID: "tsp-1")),
            attemptTimeout: nil, memory: memory
        ) { TspV1.RegisterIssuerRequest(issuerID: "tokenet-bank") }
        #expect(try store.registeredTSPNodeID() == nil)
        // The link leads to tsp-1 already, registered or not.
        #expect(throws: RPCError.self) { try first.requireOwnTSP(PeerIdentity(role: .tsp, nodeID: "tsp-2")) }
        try await first.register()
        #expect(try store.registeredTSPNodeID() == "tsp-1")

        let away = Support.connect(tsp.router, as: .issuer, server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        await away.close()
        let restarted = TSPLink(caller: away, attemptTimeout: nil, memory: memory) { TspV1.RegisterIssuerRequest() }
        #expect {
            try restarted.requireOwnTSP(PeerIdentity(role: .tsp, nodeID: "tsp-2"))
        } throws: { error in
            (error as? RPCError)?.code == .permissionDenied
                && (error as? RPCError)?.message.contains("works with the TSP node \"tsp-1\"") == true
        }
        #expect(throws: Never.self) { try restarted.requireOwnTSP(PeerIdentity(role: .tsp, nodeID: "tsp-1")) }
        // Other roles are the method's role check's to refuse, and plaintext has no identity to compare.
        #expect(throws: Never.self) { try restarted.requireOwnTSP(PeerIdentity(role: .operator, nodeID: "op-1")) }
        #expect(throws: Never.self) { try restarted.requireOwnTSP(nil) }
        // An issuer that never registered, with its link down, has no TSP to compare with.
        let fresh = try Support.store()
        let never = TSPLink(
            caller: away, attemptTimeout: nil,
            memory: .init(
                load: { () throws(IssuerError) in try fresh.registeredTSPNodeID() },
                save: { (id) throws(IssuerError) in try fresh.setRegisteredTSP(nodeID: id) })
        ) { TspV1.RegisterIssuerRequest() }
        #expect(throws: Never.self) { try never.requireOwnTSP(PeerIdentity(role: .tsp, nodeID: "tsp-2")) }
    }

    @Test func onlyOperatorsAndTheTSPMayCall() async throws {
        var router = RPCRouter()
        party.otp.register(on: &router)
        party.callCentre.register(on: &router)
        let walletOutbox = IssuerV1.IssuerCallCentre.Client(Support.connect(router, as: .wallet))
        let denied = await Support.rpcError { _ = try await walletOutbox.outbox(IssuerV1.OutboxRequest()) }
        #expect(denied?.code == .permissionDenied)
        let walletOTP = IssuerV1.IssuerOtp.Client(Support.connect(router, as: .wallet))
        let deniedOTP = await Support.rpcError {
            _ = try await walletOTP.sendOTP(IssuerV1.SendOtpRequest(digitalCardID: Self.token))
        }
        #expect(deniedOTP?.code == .permissionDenied)
    }
}
