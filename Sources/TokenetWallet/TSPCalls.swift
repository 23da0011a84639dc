import TokenetCard
import TokenetRPC
import TokenetWire

/// The wallet's calls to the TSP's provisioning API, with failures described for the person using the wallet. Each
/// ends a little before the call the wallet serves (`CallOptions.answeringInTime`), so that a TSP that does not
/// answer is named ("the TSP's Digitize failed: …") rather than by the caller's bare DEADLINE_EXCEEDED.
struct TSPCalls: Sendable {
    let client: TspV1.Provisioning.Client

    init(_ caller: any RPCCaller) {
        client = TspV1.Provisioning.Client(caller)
    }

    /// How long a call to the TSP may take outside a served call's deadline: the node's own work (the Digitize
    /// requests it sends again after each subscription, a key batch for a push) had no deadline, and a TSP that
    /// took such a call and never answered held the wallet's catch-up for good, with nothing logged.
    static let backgroundWait = Duration.seconds(30)

    /// Within the served call's time, less room for its answer (`CallOptions.answeringInTime`), and within
    /// `backgroundWait` when no served call bounds it.
    static var options: CallOptions {
        var options = CallOptions.answeringInTime
        if options.timeout == nil { options.timeout = backgroundWait }
        return options
    }

    /// Encrypts `card` as a JWE to the TSP's current key, fetched fresh so a key rotation is picked up at once.
    func encrypt(_ card: CardData) async throws -> CardV1.EncryptedCardData {
        let keys = try await call("GetEncryptionKeys") {
            try await client.getEncryptionKeys(.init(), options: Self.options)
        }
        guard let current = keys.keys.first(where: \.current) else {
            throw WalletError(.unavailable, "the TSP published no current card-data encryption key")
        }
        let key: RSAPublicKey
        do {
            key = try RSAPublicKey(pem: current.publicKeyPem)
        } catch {
            throw WalletError(.unavailable, "the TSP's current encryption key is not a usable RSA public key: \(error)")
        }
        guard key.kid == current.publicKeyIdentifier else {
            throw WalletError(
                .unavailable,
                "the TSP's current key has identifier \(current.publicKeyIdentifier), but its fingerprint is \(key.kid)"
            )
        }
        do {
            let jwe = try JWE.encrypt(card, to: key, kid: current.publicKeyIdentifier)
            return CardV1.EncryptedCardData(jwe: jwe, publicKeyIdentifier: current.publicKeyIdentifier)
        } catch {
            throw WalletError(.internal, "the card data could not be encrypted: \(error.message)")
        }
    }

    func checkEligibility(_ request: TspV1.CheckEligibilityRequest) async throws -> TspV1.CheckEligibilityResponse {
        try await call("CheckEligibility") { try await client.checkEligibility(request, options: Self.options) }
    }

    func digitize(_ request: TspV1.DigitizeRequest) async throws -> TspV1.DigitizeResponse {
        try await call("Digitize") { try await client.digitize(request, options: Self.options) }
    }

    func createPushSession(_ request: TspV1.CreatePushSessionRequest) async throws -> TspV1.CreatePushSessionResponse {
        try await call("CreatePushSession") { try await client.createPushSession(request, options: Self.options) }
    }

    /// Keeps the TSP's status code (so INVALID_ARGUMENT stays INVALID_ARGUMENT for the CLI) and says who answered.
    private func call<T>(_ method: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RPCError {
            throw RPCError(error.code, "the TSP's \(method) failed: \(error.message)", cause: error)
        }
    }
}
