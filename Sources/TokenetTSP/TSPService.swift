import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// The TSP's shared state, used by its three services: storage, keys, policy, the issuer, logs and the clock.
final class TSPService: Sendable {
    let store: TSPStore
    let keyring: TSPKeyring
    /// The data directory, whose `keys` an operator's key rotation writes (`TSPKeyFiles+Rotation`).
    let dataDirectory: String
    /// Rotations and forgettings of keys, one at a time: two at once could each save the same current key as
    /// retired and then replace each other's new one.
    let keyChanges = KeyedTurns<String>()
    let configuration: TSPConfiguration
    /// Where each issuer is called: its decisions, and delivery of the one-time codes the TSP generates.
    let issuers: IssuerDirectory
    let logger: Logger
    /// The "… failed" lines of the TSP's own failures, one throttle per call: a failure every call meets while it
    /// lasts (a data directory that refuses writes) wrote a line per call, where the call log's lines are throttled.
    let failureLogs = KeyedLogThrottles()
    let now: @Sendable () -> Date
    /// Where the TSP's components (CPS, MG, TNS) publish: the durable broker, or a recorder in tests.
    let notifications: any NotificationPublishing
    /// Orders token-state changes with their CARD_STATE publications (see `StateChangeGate`).
    let stateChanges = StateChangeGate()
    /// A token's one-time codes are stored and delivered one at a time: resends at once stored their codes in one
    /// order and had the issuer deliver them in another, so the last code the cardholder got could be one already
    /// replaced (and cost a try), and a failed delivery could put back a code a later resend had replaced.
    let otpTurns = KeyedTurns<String>()
    /// Publishes what changes journaled; a message the broker could not take goes out before the next ones.
    let journal: NotificationJournal
    /// Strong authentication: enrolments, HOTP credentials and the access tokens they log in to.
    let authentication: TSPAuthentication
    /// The verifier the TSP's services use to accept an issuer app's access token (e.g. `ActivateDigitalCard`):
    /// the authentication service's own, unless another was given (tests pass a fake).
    let accessTokenVerifier: (any AccessTokenVerifier)?
    var accessTokens: any AccessTokenVerifier { authentication }

    init(
        store: TSPStore, keyring: TSPKeyring, dataDirectory: String, configuration: TSPConfiguration,
        issuers: IssuerDirectory, logger: Logger, accessTokenKey: [UInt8], now: @escaping @Sendable () -> Date,
        notifications: any NotificationPublishing, accessTokenVerifier: (any AccessTokenVerifier)? = nil
    ) {
        let authentication = TSPAuthentication(
            store: store, signer: AccessTokenSigner(key: accessTokenKey), configuration: configuration, now: now)
        self.authentication = authentication
        self.accessTokenVerifier = accessTokenVerifier ?? authentication
        self.store = store
        self.keyring = keyring
        self.dataDirectory = dataDirectory
        self.configuration = configuration
        self.issuers = issuers
        self.logger = logger
        self.now = now
        self.notifications = notifications
        self.journal = NotificationJournal(store: store, notifications: notifications, logger: logger)
    }

    var nowMs: UInt64 { now().unixMilliseconds }

    /// Runs a handler body: TSP errors become their status, anything else an INTERNAL status with the cause logged.
    func handling<T>(
        _ what: String, _ context: ServerContext, _ body: (Logger) async throws -> T
    ) async throws -> T {
        let log = logger.withTraceID(context.traceID)
        do {
            return try await body(log)
        } catch let error as TSPError {
            if error.isFailure {
                log.error("\(what) failed", error: error.description, throttledBy: failureLogs.throttle(what))
            } else {
                // At debug only: the node's call log already has a refusal at info, as "call failed" with the
                // method, the peer, the status and this message, so a line here too told every refusal twice.
                // The status the caller saw, as the wire names it (NOT_FOUND), not the Swift case (notFound).
                let status = error.rpcError.code.protoValueName ?? "\(error.rpcError.code.rawValue)"
                log.debug("\(what) refused", ["code": status, "reason": error.message])
            }
            throw error.rpcError
        } catch let error as RPCError {
            throw error
        } catch is CancellationError {
            // The caller gave up (it cancelled, or its deadline passed) and the handler stopped: nothing failed here.
            log.debug("\(what) ended: its caller gave up")
            throw RPCError(.cancelled, "\(what) was cancelled: its caller gave up")
        } catch {
            let wrapped = TSPError.internal(what, error)
            log.error("\(what) failed", error: wrapped.description, throttledBy: failureLogs.throttle(what))
            throw wrapped.rpcError
        }
    }

    /// Decrypts card data sent to the TSP; a bad JWE or unknown key is the caller's mistake, named precisely.
    ///
    /// `public_key_identifier` is optional, but when given it must name the key the JWE's `kid` names: a sender
    /// whose two disagree has mixed up its keys, and the sandbox says so rather than quietly trusting the `kid`.
    func decryptCardData(_ encrypted: CardV1.EncryptedCardData?, field: String) throws -> CardData {
        guard let encrypted, !encrypted.jwe.isEmpty else {
            throw TSPError(.invalidArgument, "\(field).jwe is required: the card data encrypted to the TSP's key")
        }
        let (kid, card): (String, CardData)
        do {
            (kid, card) = try JWE.decryptCardData(encrypted.jwe, with: keyring)
        } catch {
            throw TSPError(.invalidArgument, "\(field) cannot be used: \(error.message)", cause: error)
        }
        // A code no card has (`abc`, two digits) is the sender's mistake, refused before the issuer compares it
        // with the card's: sent on, five of them locked the card for a day, each told only that it did not match.
        if let code = card.cvv2, !code.isEmpty, ManualCardForm.securityCodeProblem(code) != nil {
            throw TSPError(
                .invalidArgument,
                "\(field) cannot be used: the card data's cvv2 is not a security code (3 or 4 digits, as a string); "
                    + "leave it out when the card has none. The issuer was not asked: no try of the card's code was used"
            )
        }
        let named = encrypted.publicKeyIdentifier
        guard named.isEmpty || named == kid else {
            throw TSPError(
                .invalidArgument,
                "\(field).public_key_identifier \(Self.shownKeyID(named)) is not the key the JWE names (kid "
                    + "\(Self.shownKeyID(kid))): give the kid of the key the card data is encrypted to, or leave it empty"
            )
        }
        return card
    }

    /// A key identifier as a message shows it: quoted, and cut past the 64 hex digits of a fingerprint (a caller's
    /// mistake may be any length). Whole up to there: cut at 20, two fingerprints that differ further on could not be
    /// told apart from the message.
    static func shownKeyID(_ identifier: String) -> String {
        // Masked before it is cut: a card number cut in two would show its first digits in clear.
        let masked = maskPAN(identifier)
        let shown = masked.unicodeScalars.prefix(64)
        let text = String(String.UnicodeScalarView(shown)).debugDescription
        return shown.count < masked.unicodeScalars.count ? String(text.dropLast()) + "…\"" : text
    }

    /// A random, unguessable identifier: 32 bytes from the system's secure generator, base64url.
    static func randomIdentifier() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
