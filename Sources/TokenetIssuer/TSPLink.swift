import Synchronization
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// The issuer's side of its relationship with the TSP: registering, and the TSP's published card-data key that
/// pushed cards are encrypted to (from the registration, then from each push's lookup: `keyForPushing`).
final class TSPLink: Sendable {
    let caller: (any RPCCaller)?
    private let request: @Sendable () throws(IssuerError) -> TspV1.RegisterIssuerRequest
    private let tspKey = Mutex<RSAPublicKey?>(nil)
    /// The node id of the TSP the last successful registration reached (from its certificate), in this run or,
    /// through `memory`, an earlier one.
    private let registeredWith: Mutex<String?>
    private let memory: RegisteredTSPMemory?
    /// Why the last registration attempt failed; nil before any did, and once one succeeded.
    private let lastFailure = Mutex<String?>(nil)
    /// Those waiting for a registration to succeed (`waitUntilRegistered`), by a number of their own; nil once one
    /// has.
    private let waiters = Mutex<[Int: CheckedContinuation<Void, Never>]?>([:])
    private let nextWaiter = Mutex(0)
    /// Each registration attempt waits this long for the TSP (the channel reconnects within it); nil leaves it to
    /// the channel's own attempt limit.
    let attemptTimeout: Duration?
    /// Runs `push` with the key to push with (`keyForPushing`); when the TSP refuses the card data for its key (one
    /// it forgot since this node learnt it, while lookups were paused), asks for the current key at once and runs
    /// `push` once more with it: every push failed until the pause ran out.
    func pushing<T>(_ push: (RSAPublicKey) async throws -> T) async throws -> T {
        let key = try await keyForPushing()
        do {
            return try await push(key)
        } catch let error as RPCError where Self.refusesKey(error) {
            lookupsPausedUntil.withLock { $0 = nil }
            guard let latest = await publishedCurrentKey(), latest.kid != key.kid else { throw error }
            tspKey.withLock { $0 = latest }
            return try await push(latest)
        }
    }

    /// Whether the TSP (directly, or through the wallet backend) refused card data for the key it was encrypted to.
    static func refusesKey(_ error: RPCError) -> Bool {
        error.code == .invalidArgument && error.message.contains("no decryption key has kid")
    }

    /// How long a push waits for the TSP's current key before it uses the one it has; nil leaves it to the call's
    /// own deadline. Inside a served call it waits at most an eighth of the time left, so that a TSP that does not
    /// answer leaves the call it serves the time to say so.
    let keyQueryTimeout: Duration?
    /// Until when pushes use the key they have without asking: set when a lookup failed, so that while the TSP does
    /// not answer only the first push waits for it.
    private let lookupsPausedUntil = Mutex<ContinuousClock.Instant?>(nil)
    /// Where a failed lookup is said (once a pause): a push the TSP then refuses for an old key would otherwise
    /// leave nothing in the issuer's log to say why its key was not the current one.
    private let logger: Logger?
    static let lookupPause = Duration.seconds(30)

    /// Where the TSP it registered with is kept across restarts (the issuer's store); nil keeps it in memory only.
    struct RegisteredTSPMemory: Sendable {
        let load: @Sendable () throws(IssuerError) -> String?
        let save: @Sendable (String) throws(IssuerError) -> Void
    }

    init(
        caller: (any RPCCaller)?, attemptTimeout: Duration? = .seconds(5), keyQueryTimeout: Duration? = .seconds(2),
        memory: RegisteredTSPMemory? = nil, logger: Logger? = nil,
        request: @escaping @Sendable () throws(IssuerError) -> TspV1.RegisterIssuerRequest
    ) {
        self.logger = logger
        self.caller = caller
        self.attemptTimeout = attemptTimeout
        self.keyQueryTimeout = keyQueryTimeout
        self.request = request
        self.memory = memory
        // Unreadable, it is as if there were none: the next registration writes it again.
        registeredWith = Mutex((try? memory?.load()) ?? nil)
    }

    /// The TSP's key as last learnt: from the last successful registration or a later push's lookup.
    var currentKey: RSAPublicKey? { tspKey.withLock { $0 } }

    /// One registration attempt; on success keeps and returns the TSP's key.
    @discardableResult
    func register() async throws -> RSAPublicKey {
        guard let caller else {
            throw RPCError(.failedPrecondition, "issuer-node was started without --tsp, so it cannot reach the TSP")
        }
        let key: RSAPublicKey
        do {
            let response = try await TspV1.Issuers.Client(caller).registerIssuer(
                try request(), options: CallOptions(timeout: attemptTimeout))
            do {
                key = try RSAPublicKey(pem: response.tspPublicKeyPem)
            } catch {
                throw RPCError(.internal, "the TSP answered the registration with an unusable public key: \(error)")
            }
        } catch {
            lastFailure.withLock { $0 = "\(error)" }
            throw error
        }
        tspKey.withLock { $0 = key }
        if let peer = caller.connectedPeer, peer.role == .tsp {
            let changed = registeredWith.withLock { registered in
                defer { registered = peer.nodeID }
                return registered != peer.nodeID
            }
            // A failed write leaves the memory of this run: the check still holds until the node stops.
            if changed { try? memory?.save(peer.nodeID) }
        }
        lastFailure.withLock { $0 = nil }
        let waiting = waiters.withLock { waiters in
            defer { waiters = nil }
            return waiters.map { Array($0.values) } ?? []
        }
        for waiter in waiting { waiter.resume() }
        return key
    }

    /// Refuses a call from a TSP node other than this issuer's own: the one its link (`--tsp`) leads to now, or
    /// else the one it last registered with (kept across restarts). Any certificate of the deployment's CA with the
    /// tsp role passed the method's role check, and such a node had the issuer text a cardholder a code of its
    /// choosing. Nothing is refused before the issuer's first registration (it has decided no token then, so a
    /// code has no card to go to), nor without a link (no `--tsp`) or in plaintext, where there is no TSP to
    /// compare with.
    func requireOwnTSP(_ peer: PeerIdentity?) throws(RPCError) {
        guard let peer, peer.role == .tsp, let caller else { return }
        let own =
            caller.connectedPeer.flatMap { $0.role == .tsp ? $0.nodeID : nil } ?? registeredWith.withLock { $0 }
        guard let own, own != peer.nodeID else { return }
        throw RPCError(
            .permissionDenied,
            "this issuer works with the TSP node \"\(own)\" (its --tsp), not \"\(peer.nodeID)\": only the TSP its "
                + "--tsp leads to may ask it for decisions and codes")
    }

    /// Returns once a registration has succeeded in this run, or when the task is cancelled (the node stops).
    func waitUntilRegistered() async {
        let id = nextWaiter.withLock { next in
            defer { next += 1 }
            return next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = waiters.withLock { waiters -> Bool in
                    guard waiters != nil, !Task.isCancelled else { return false }
                    waiters?[id] = continuation
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            waiters.withLock { $0?.removeValue(forKey: id) }?.resume()
        }
    }

    /// Refuses, with FAILED_PRECONDITION, what needs this run's registration when it has not succeeded: the TSP
    /// answers a node for the issuers it registered, and one whose registration was refused now (its issuer id taken
    /// by another node) would be answered for another issuer it registered in an earlier run, whose cards and key
    /// it no longer holds. The message says why the registration has not succeeded, as far as it is known.
    func requireRegistered() throws(RPCError) {
        guard caller != nil else {
            throw RPCError(.failedPrecondition, "issuer-node was started without --tsp, so it cannot reach the TSP")
        }
        guard currentKey == nil else { return }
        do {
            _ = try request()
        } catch {
            // No profile: the node does not register at all (IssuerNode), and waiting would not help.
            throw RPCError(.failedPrecondition, "the issuer does not register with the TSP: \(error.message)")
        }
        guard let failure = lastFailure.withLock({ $0 }) else {
            throw RPCError(
                .failedPrecondition,
                "the issuer's registration with the TSP has not completed yet (it registers at start); try again "
                    + "shortly")
        }
        throw RPCError(
            .failedPrecondition,
            "the issuer's registration with the TSP failed (\(failure)); issuer-node keeps trying, and its log says "
                + "how each attempt ends")
    }

    /// The key to push with: the TSP's current key, asked for at each push (`Provisioning.GetEncryptionKeys`) so
    /// that a key its operator rotated is used at once, before the one it retired is forgotten; the last key it had
    /// (from the registration or the last lookup) when the TSP does not answer that in `keyQueryTimeout` (a session
    /// push goes through the wallet backend, which may reach the TSP when this node cannot), and without asking for
    /// `lookupPause` after such a failure; a fresh registration when there is none yet.
    func keyForPushing() async throws -> RSAPublicKey {
        if let key = currentKey {
            guard let latest = await publishedCurrentKey() else { return key }
            tspKey.withLock { $0 = latest }
            return latest
        }
        do {
            return try await register()
        } catch let error as RPCError where error.code == .failedPrecondition {
            throw error
        } catch {
            // The reason in words: its status (UNAVAILABLE) is this error's own, and said once.
            let reason = (error as? RPCError)?.message ?? "\(error)"
            throw RPCError(.unavailable, "the issuer is not registered with the TSP yet: \(reason)")
        }
    }

    /// The TSP's current card-data key as it publishes it now; nil when it cannot be had (no answer, an unusable
    /// key, or one whose fingerprint is not the identifier it is published under).
    private func publishedCurrentKey() async -> RSAPublicKey? {
        guard let caller else { return nil }
        if let until = lookupsPausedUntil.withLock({ $0 }), ContinuousClock.now < until { return nil }
        var timeout = keyQueryTimeout
        if let deadline = ServerContext.current?.deadline {
            let share = (deadline - .now) / 8
            timeout = min(timeout ?? share, share)
        }
        let keys: [TspV1.EncryptionKey]
        do {
            keys = try await TspV1.Provisioning.Client(caller).getEncryptionKeys(
                .init(), options: CallOptions(timeout: timeout)
            ).keys
        } catch {
            lookupsPausedUntil.withLock { $0 = .now + Self.lookupPause }
            logger?.warning(
                "the TSP did not tell its current card-data key; pushing with the key this node last had, and "
                    + "asking again in \(Self.lookupPause.components.seconds) s",
                ["error": "\(error)"])
            return nil
        }
        lookupsPausedUntil.withLock { $0 = nil }
        guard let current = keys.first(where: \.current), let key = try? RSAPublicKey(pem: current.publicKeyPem),
            key.kid == current.publicKeyIdentifier
        else { return nil }
        return key
    }

    /// Answers that say the TSP will not take this registration as it is, rather than that it cannot be reached.
    static let refusals: Set<StatusCode> = [.permissionDenied, .failedPrecondition, .invalidArgument, .alreadyExists]

    /// Registers until an attempt succeeds (or the task is cancelled), logging the outcome.
    func registerUntilDone(
        logger: Logger, machine: RegistrationStateMachine = RegistrationStateMachine(),
        sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        isStarting: @Sendable () -> Bool = { false }
    ) async {
        var machine = machine
        var next = machine.start()
        // Whether a failure was said at warning (or error) level: those while the node starts are info, as a TSP
        // started with this node may still be starting, so the first one after the start is a warning.
        var warned = false
        while let action = next {
            switch action {
            case .register(let attempt):
                // Each attempt is a flow of its own: this node's line and the TSP's line for the call share its id.
                let stopping = await FlowTrace.runAsNewFlow { () async -> Bool in
                    do {
                        let key = try await register()
                        logger.info("registered with the TSP", ["attempt": "\(attempt)", "tsp_kid": key.kid])
                        next = machine.attemptSucceeded()
                        return false
                    } catch {
                        // Cancelled: the node is stopping, and the failure is its own doing.
                        if Task.isCancelled { return true }
                        next = machine.attemptFailed()
                        // The first failure and every tenth are logged; the rest would only repeat them. A TSP that
                        // is down is expected while it starts (a warning); one that refuses this issuer (another node
                        // holds its id, its BIN ranges overlap another issuer's, the fixture is wrong) needs a person,
                        // so it is an error, though the node retries in case the TSP's side is what changes.
                        let refused = (error as? RPCError).map { Self.refusals.contains($0.code) } ?? false
                        let starting = (error as? RPCError)?.mayBeAPeerStillStarting == true && isStarting()
                        let shown = attempt == 1 || attempt % 10 == 0 || !warned && !starting
                        if shown, !starting { warned = true }
                        logger.log(
                            !shown ? .debug : refused ? .error : starting ? .info : .warning,
                            refused
                                ? "the TSP refused this issuer's registration; fix the cause (retrying)"
                                : starting
                                    ? "registration with the TSP failed (it may still be starting); retrying"
                                    : "registration with the TSP failed; retrying",
                            [
                                "attempt": "\(attempt)", "error": "\(error)",
                            ])
                        return false
                    }
                }
                if stopping { return }
            case .wait(let delay, _):
                do {
                    try await sleep(delay)
                } catch {
                    return
                }
                next = machine.waited()
            case .finished:
                return
            }
        }
    }
}
