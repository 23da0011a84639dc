import Synchronization
import TokenetCard
import TokenetRPC
import TokenetWire

/// A TSP's provisioning API that records what the wallet sent and answers as each test configures it.
///
/// It holds a real keyring, so the card data the wallet encrypts can be decrypted and checked.
final class FakeTSP: TspV1.Provisioning.ServiceProtocol {
    struct State {
        var eligibilityRequests: [TspV1.CheckEligibilityRequest] = []
        var digitizeRequests: [TspV1.DigitizeRequest] = []
        var pushSessionRequests: [TspV1.CreatePushSessionRequest] = []
        var keyRequests = 0
        /// The answer to CheckEligibility.
        var eligibility = TspV1.CheckEligibilityResponse(
            eligible: true, eligibilityReceipt: "receipt-1", receiptExpiresAtMs: UInt64.max / 2, scheme: .visa,
            panLast4: "1111",
            terms: .termsAndConditions(
                CardV1.TermsAndConditions(id: "tc-visa-1", version: "1", language: "en", text: "Be nice.")))
        /// The answer to Digitize.
        var digitize = TspV1.DigitizeResponse(
            decision: .approved, digitalCardID: "DNITHE000000000000000001", tokenState: .active, tokenLast4: "9012",
            tokenExpiry: "12/29", scheme: .visa, panLast4: "1111", decidedBy: "issuer")
        /// How many Digitize calls fail with UNAVAILABLE before one succeeds.
        var digitizeFailures = 0
        /// When set, Digitize refuses with it (after `digitizeFailures`).
        var digitizeRefusal: RPCError?
        /// When set, Digitize awaits it before it answers (a TSP still asking the issuer).
        var digitizeHold: (@Sendable () async -> Void)?
        /// What CheckEligibility fails with, when set.
        var eligibilityFailure: RPCError?
        /// When set, CheckEligibility awaits it before it answers.
        var eligibilityHold: (@Sendable () async -> Void)?
        /// The issuer a Digitize answer names when `digitize` names none: the harness's issuer app is node
        /// issuer-1, as a real TSP names the node that registered the card's issuer.
        var issuer = (id: "bank-a", nodeID: "issuer-1")
        /// GetTokenIssuer's answers, by digital card id and wallet account: any other token is NOT_FOUND, as the
        /// TSP answers for a token of another wallet account.
        var tokenIssuers: [String: TokenIssuer] = [:]
        /// How many GetTokenIssuer calls fail with UNAVAILABLE before they are answered.
        var tokenIssuerFailures = 0
        var tokenIssuerRequests: [TspV1.GetTokenIssuerRequest] = []
    }

    /// A token's wallet account and issuer, as the TSP holds them.
    struct TokenIssuer {
        var walletAccountID: String
        var issuerID: String
        var nodeID: String
    }

    let keyring: TSPKeyring
    let state = Mutex(State())

    init() throws {
        keyring = try TSPKeyring.generate()
    }

    func configure(_ change: (inout State) -> Void) { state.withLock { change(&$0) } }

    var recorded: State { state.withLock { $0 } }

    func getEncryptionKeys(_ request: TspV1.GetEncryptionKeysRequest, context: ServerContext) async throws
        -> TspV1.GetEncryptionKeysResponse
    {
        state.withLock { $0.keyRequests += 1 }
        return TspV1.GetEncryptionKeysResponse(
            keys: try keyring.publishedKeys().map {
                TspV1.EncryptionKey(publicKeyIdentifier: $0.kid, publicKeyPem: $0.pem, current: $0.isCurrent)
            })
    }

    func checkEligibility(_ request: TspV1.CheckEligibilityRequest, context: ServerContext) async throws
        -> TspV1.CheckEligibilityResponse
    {
        let hold = state.withLock { state in
            state.eligibilityRequests.append(request)
            return state.eligibilityHold
        }
        if let hold { await hold() }
        return try state.withLock {
            if let failure = $0.eligibilityFailure { throw failure }
            return $0.eligibility
        }
    }

    func digitize(_ request: TspV1.DigitizeRequest, context: ServerContext) async throws -> TspV1.DigitizeResponse {
        let (response, fail) = try state.withLock { state -> (TspV1.DigitizeResponse, Bool) in
            state.digitizeRequests.append(request)
            guard state.digitizeFailures == 0 else {
                state.digitizeFailures -= 1
                return (state.digitize, true)
            }
            if let refusal = state.digitizeRefusal { throw refusal }
            var response = state.digitize
            if response.issuerID.isEmpty && response.issuerNodeID.isEmpty {
                response.issuerID = state.issuer.id
                response.issuerNodeID = state.issuer.nodeID
            }
            return (response, false)
        }
        if let hold = state.withLock({ $0.digitizeHold }) { await hold() }
        if fail { throw RPCError(.unavailable, "the issuer is restarting") }
        return response
    }

    func createPushSession(_ request: TspV1.CreatePushSessionRequest, context: ServerContext) async throws
        -> TspV1.CreatePushSessionResponse
    {
        state.withLock { $0.pushSessionRequests.append(request) }
        return TspV1.CreatePushSessionResponse(pushSessionID: "ps-1", expiresAtMs: 1_000)
    }

    func getTokenIssuer(_ request: TspV1.GetTokenIssuerRequest, context: ServerContext) async throws
        -> TspV1.GetTokenIssuerResponse
    {
        let (answer, fail) = state.withLock { state -> (TokenIssuer?, Bool) in
            state.tokenIssuerRequests.append(request)
            guard state.tokenIssuerFailures == 0 else {
                state.tokenIssuerFailures -= 1
                return (nil, true)
            }
            return (state.tokenIssuers[request.digitalCardID], false)
        }
        if fail { throw RPCError(.unavailable, "the TSP is restarting") }
        guard let answer, answer.walletAccountID == request.walletAccountID else {
            throw RPCError(.notFound, "this wallet account holds no token \"\(request.digitalCardID)\"")
        }
        return TspV1.GetTokenIssuerResponse(
            digitalCardID: request.digitalCardID, issuerID: answer.issuerID, issuerNodeID: answer.nodeID)
    }

    /// The card data of an eligibility request, decrypted with the fake's keyring.
    func decrypt(_ request: TspV1.CheckEligibilityRequest) throws -> (kid: String, card: CardData) {
        guard case .encryptedCardData(let data)? = request.instrument else { throw CardError(.malformedJWE, "none") }
        return try JWE.decryptCardData(data.jwe, with: keyring)
    }
}

/// A hold for one of the fake TSP's calls (`digitizeHold`, `eligibilityHold`): `hold` waits until `open` yields,
/// and `entered` yields as a call starts waiting, so a test acts while the call is under way.
struct FakeTSPGate {
    let entered: AsyncStream<Void>
    let open: AsyncStream<Void>.Continuation
    let hold: @Sendable () async -> Void

    init() {
        let (entered, enter) = AsyncStream<Void>.makeStream()
        let (gate, open) = AsyncStream<Void>.makeStream()
        self.entered = entered
        self.open = open
        hold = {
            enter.yield()
            for await _ in gate { break }
        }
    }
}
