import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetIssuer

/// Whether the fake TSP accepts connections.
final class Switch: Sendable {
    private let value = Mutex(false)
    var isOn: Bool { value.withLock { $0 } }
    func turnOn() { value.withLock { $0 = true } }
}

@Suite struct RegistrationTests {
    /// A push before the issuer could register says why in words, with the status named once (it read "not registered
    /// with the TSP yet: UNAVAILABLE: …").
    @Test func aPushBeforeRegistrationSaysWhyOnce() async {
        var router = RPCRouter()
        router.unary(TspV1.Issuers.registerIssuer) { (_, _) async throws -> TspV1.RegisterIssuerResponse in
            throw RPCError(.unavailable, "the TSP is starting")
        }
        // No deadline on the attempt: the reason is what this checks, and on a loaded machine the in-memory call
        // has taken longer than the node's 5 s.
        let link = TSPLink(caller: Support.connect(router, as: .issuer), attemptTimeout: nil) {
            TspV1.RegisterIssuerRequest()
        }
        do {
            _ = try await link.keyForPushing()
            Issue.record("the issuer registered")
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            #expect(error.message == "the issuer is not registered with the TSP yet: the TSP is starting")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    /// A push encrypts to the key the TSP publishes as current now (its operator may have rotated it since the
    /// registration); a TSP that does not answer that, or publishes a key whose fingerprint is not its identifier,
    /// leaves the registered key in use.
    @Test func aPushFollowsTheTSPsRotatedKey() async throws {
        let registered = try Support.tspKey()
        let rotated = try RSAPrivateKey.generate()
        func link(publishing published: [TspV1.EncryptionKey]?) throws -> TSPLink {
            var router = RPCRouter()
            router.unary(TspV1.Issuers.registerIssuer) { (_, _) async throws -> TspV1.RegisterIssuerResponse in
                TspV1.RegisterIssuerResponse(
                    tspPublicKeyIdentifier: registered.kid, tspPublicKeyPem: try registered.publicKey.pem())
            }
            if let published {
                router.unary(TspV1.Provisioning.getEncryptionKeys) { _, _ in
                    TspV1.GetEncryptionKeysResponse(keys: published)
                }
            }
            // No time limits: on a loaded machine the in-memory calls have taken longer than the node's 2 s.
            return TSPLink(caller: Support.connect(router, as: .issuer), attemptTimeout: nil, keyQueryTimeout: nil) {
                TspV1.RegisterIssuerRequest()
            }
        }
        let keys = [
            TspV1.EncryptionKey(
                publicKeyIdentifier: rotated.kid, publicKeyPem: try rotated.publicKey.pem(), current: true),
            TspV1.EncryptionKey(
                publicKeyIdentifier: registered.kid, publicKeyPem: try registered.publicKey.pem(), current: false),
        ]
        let following = try link(publishing: keys)
        try await following.register()
        #expect(try await following.keyForPushing().kid == rotated.kid)
        #expect(following.currentKey?.kid == rotated.kid)
        for published in [nil, [keys[0].with(identifier: registered.kid)]] {
            let staying = try link(publishing: published)
            try await staying.register()
            #expect(try await staying.keyForPushing().kid == registered.kid)
        }
    }

    /// A TSP that does not answer the lookup: the push goes on with the key it has once the lookup's time is up,
    /// and the pushes after it do not ask again for a while (`TSPLink.lookupPause`), so that only one waits.
    @Test func aPushDoesNotWaitForATSPThatDoesNotAnswerTheLookup() async throws {
        let registered = try Support.tspKey()
        var router = RPCRouter()
        router.unary(TspV1.Issuers.registerIssuer) { (_, _) async throws -> TspV1.RegisterIssuerResponse in
            TspV1.RegisterIssuerResponse(
                tspPublicKeyIdentifier: registered.kid, tspPublicKeyPem: try registered.publicKey.pem())
        }
        router.unary(TspV1.Provisioning.getEncryptionKeys) { _, _ in
            try await Task.sleep(for: .seconds(600))
            return TspV1.GetEncryptionKeysResponse()
        }
        // Counted as this side makes them: on a loaded machine a lookup's time can be up before the fake hears it.
        let counted = UnreachableSwitch(Support.connect(router, as: .issuer))
        let sink = MemoryLogSink()
        let link = TSPLink(
            caller: counted, attemptTimeout: nil, keyQueryTimeout: .milliseconds(100), logger: Support.logger(sink)
        ) { TspV1.RegisterIssuerRequest() }
        try await link.register()
        for _ in 0..<3 { #expect(try await link.keyForPushing().kid == registered.kid) }
        #expect(counted.unaryCalls.filter { $0.hasSuffix("/GetEncryptionKeys") }.count == 1)
        #expect(sink.lines.filter { $0.contains("the TSP did not tell its current card-data key") }.count == 1)
    }

    /// A push the TSP refuses for its key (forgotten there while this node's lookups were paused, the TSP having
    /// not answered one) asks for the current key at once and is made again with it, where every push failed until
    /// the pause ran out.
    @Test func aPushRefusedForAForgottenKeyIsMadeAgainWithTheCurrentOne() async throws {
        let registered = try Support.tspKey()
        let rotated = try RSAPrivateKey.generate()
        let rotatedKey = TspV1.EncryptionKey(
            publicKeyIdentifier: rotated.kid, publicKeyPem: try rotated.publicKey.pem(), current: true)
        let published = Mutex<[TspV1.EncryptionKey]?>(nil)
        var router = RPCRouter()
        router.unary(TspV1.Issuers.registerIssuer) { (_, _) async throws -> TspV1.RegisterIssuerResponse in
            TspV1.RegisterIssuerResponse(
                tspPublicKeyIdentifier: registered.kid, tspPublicKeyPem: try registered.publicKey.pem())
        }
        router.unary(TspV1.Provisioning.getEncryptionKeys) { _, _ in
            guard let keys = published.withLock({ $0 }) else { throw RPCError(.unavailable, "the TSP is busy") }
            return TspV1.GetEncryptionKeysResponse(keys: keys)
        }
        let link = TSPLink(caller: Support.connect(router, as: .issuer), attemptTimeout: nil, keyQueryTimeout: nil) {
            TspV1.RegisterIssuerRequest()
        }
        try await link.register()
        let used = Mutex<[String]>([])
        let answer = try await link.pushing { key in
            used.withLock { $0.append(key.kid) }
            guard key.kid == rotated.kid else {
                // The TSP answers again, with its new key, and refuses the old one.
                published.withLock { $0 = [rotatedKey] }
                throw RPCError(.invalidArgument, "encrypted_card_data cannot be used: no decryption key has kid …")
            }
            return "pushed"
        }
        #expect(answer == "pushed")
        #expect(used.withLock { $0 } == [registered.kid, rotated.kid])
        #expect(link.currentKey?.kid == rotated.kid)
    }

    /// A channel to `tsp` whose connections are refused until `up` is set.
    static func channel(to tsp: FakeTSP, up: Switch) -> RPCChannel {
        let server = RPCServer(router: tsp.router)
        return RPCChannel(
            backoff: RPCChannel.Backoff(initial: .milliseconds(1), maximum: .milliseconds(2)),
            attemptsWithoutDeadline: 1
        ) {
            guard up.isOn else { throw RPCError(.unavailable, "connection refused") }
            let (clientEnd, serverEnd) = InMemoryByteStream.pair(
                client: PeerIdentity(role: .issuer, nodeID: "issuer-1"),
                server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
            Task { await server.serve(serverEnd) }
            return clientEnd
        }
    }

    @Test func retriesUntilTheTSPIsUp() async throws {
        let tsp = FakeTSP(key: try Support.tspKey())
        let up = Switch()
        let sink = MemoryLogSink()
        let party = try Support.party(tsp: Self.channel(to: tsp, up: up), sink: sink)
        let sleeps = Mutex<[Duration]>([])
        await party.tsp.registerUntilDone(
            logger: Support.logger(sink),
            machine: RegistrationStateMachine(initialDelay: .milliseconds(10), maximumDelay: .seconds(1))
        ) { delay in
            // The TSP comes up during the second wait.
            let count = sleeps.withLock { sleeps in
                sleeps.append(delay)
                return sleeps.count
            }
            if count == 2 { up.turnOn() }
        }
        #expect(sleeps.withLock { $0 } == [.milliseconds(10), .milliseconds(20)])
        let registrations = tsp.state.withLock { $0.registrations }
        #expect(registrations.count == 1)
        let request = try #require(registrations.first)
        #expect(request.issuerID == "tokenet-bank")
        #expect(request.displayName == "Tokenet Bank")
        #expect(
            request.binRanges.map { "\($0.low)-\($0.high)" } == ["476100-476199", "540000-540099", "222300-222399"])
        #expect(try RSAPublicKey(pem: request.encryptionPublicKeyPem).kid == party.key.kid)
        #expect(party.tsp.currentKey?.kid == tsp.key.kid)
        let lines = sink.lines
        #expect(lines.filter { $0.contains("registration with the TSP failed") }.count == 2)
        #expect(lines.contains { $0.contains("registered with the TSP") && $0.contains("attempt=3") })
        // The attempt is a flow of its own: the TSP's side and this node's line share its trace id.
        let trace = try #require(tsp.state.withLock { $0.registrationTraces.first })
        #expect(
            lines.contains { $0.contains("registered with the TSP") && $0.contains("trace_id=\(trace)") }, "\(lines)")
        let failures = lines.filter { $0.contains("registration with the TSP failed") }
        #expect(Set(failures.compactMap { $0.firstMatch(of: /trace_id=([0-9a-f]+)/)?.1 }).count == 2, "\(failures)")
    }

    /// A TSP started with the issuer may still be starting: a failure while the node starts is said at info level,
    /// and the first one after the start is the warning.
    @Test func aTSPNotUpWhileTheNodeStartsIsSaidAtInfoAndWarnedAfterTheStart() async throws {
        let tsp = FakeTSP(key: try Support.tspKey())
        let up = Switch()
        let sink = MemoryLogSink()
        let party = try Support.party(tsp: Self.channel(to: tsp, up: up), sink: sink)
        let waits = Mutex(0)
        await party.tsp.registerUntilDone(
            logger: Support.logger(sink),
            machine: RegistrationStateMachine(initialDelay: .milliseconds(10), maximumDelay: .seconds(1)),
            sleep: { _ in
                let count = waits.withLock { waits in
                    waits += 1
                    return waits
                }
                if count == 4 { up.turnOn() }
            },
            isStarting: { waits.withLock { $0 } < 2 })
        let failures = sink.lines.filter { $0.contains("registration with the TSP failed") }
        #expect(failures.count == 4, "\(failures)")
        // Attempts 1 and 2 while starting (the first said, at info), 3 after (the warning), 4 not repeated.
        #expect(failures.first?.contains(" info ") == true && failures.first?.contains("may still be starting") == true)
        #expect(failures.filter { $0.contains(" warning ") }.count == 1, "\(failures)")
        #expect(failures.firstIndex { $0.contains(" warning ") } == 2, "\(failures)")
        #expect(sink.lines.contains { $0.contains("registered with the TSP") && $0.contains("attempt=5") })
    }

    /// A TSP that answers, and refuses this issuer, needs a person: the failure is an error, not the warning of a
    /// TSP still starting, and the node keeps trying in case the TSP's side is what changes.
    @Test func aRefusalIsAnErrorAndRetried() async throws {
        let tsp = FakeTSP(key: try Support.tspKey())
        tsp.state.withLock {
            $0.registrationRefusal = RPCError(
                .permissionDenied, "issuer \"tokenet-bank\" is registered by another node")
        }
        let up = Switch()
        up.turnOn()
        let sink = MemoryLogSink()
        let party = try Support.party(tsp: Self.channel(to: tsp, up: up), sink: sink)
        let waits = Mutex(0)
        await party.tsp.registerUntilDone(logger: Support.logger(sink)) { _ in
            let count = waits.withLock { waits in
                waits += 1
                return waits
            }
            if count == 10 { tsp.state.withLock { $0.registrationRefusal = nil } }
        }
        let lines = sink.lines
        let refusals = lines.filter { $0.contains("the TSP refused this issuer's registration; fix the cause") }
        #expect(refusals.count == 10, "\(lines)")
        // Attempts 1 and 10 at error; the others at debug, so as not to repeat them.
        let errors = refusals.filter { $0.contains(" error ") }
        #expect(errors.count == 2, "\(refusals)")
        #expect(errors.allSatisfy { $0.contains("registered by another node") })
        #expect(!lines.contains { $0.contains("registration with the TSP failed") })
        #expect(lines.contains { $0.contains("registered with the TSP") && $0.contains("attempt=11") })
    }

    @Test func stopsWhenCancelledWhileWaiting() async throws {
        let tsp = FakeTSP(key: try Support.tspKey())
        let party = try Support.party(tsp: Self.channel(to: tsp, up: Switch()))
        let waits = Mutex(0)
        await party.tsp.registerUntilDone(logger: Support.logger()) { _ in
            waits.withLock { $0 += 1 }
            throw CancellationError()
        }
        #expect(waits.withLock { $0 } == 1)
        #expect(party.tsp.currentKey == nil)
    }

    /// The issuer node subscribes to its notifications once its registration succeeded (`waitUntilRegistered`): a
    /// node refused meanwhile (another node holds its issuer id) took the messages of its node id's queue from the
    /// issuer they were for. Waiting ends with the registration, or when the node stops.
    @Test func waitingForTheRegistrationEndsWithItOrWhenCancelled() async throws {
        let tsp = FakeTSP(key: try Support.tspKey())
        tsp.state.withLock { $0.registrationRefusal = RPCError(.permissionDenied, "registered by another node") }
        let up = Switch()
        up.turnOn()
        let party = try Support.party(tsp: Self.channel(to: tsp, up: up))
        let waited = Mutex(0)
        let waiter = Task {
            await party.tsp.waitUntilRegistered()
            waited.withLock { $0 += 1 }
        }
        _ = try? await party.tsp.register()
        try await Task.sleep(for: .milliseconds(50))
        #expect(waited.withLock { $0 } == 0)
        tsp.state.withLock { $0.registrationRefusal = nil }
        try await party.tsp.register()
        await waiter.value
        #expect(waited.withLock { $0 } == 1)
        // Registered: a later wait returns at once.
        await party.tsp.waitUntilRegistered()

        let unregistered = try Support.party(tsp: Self.channel(to: tsp, up: Switch()))
        let stopped = Task { await unregistered.tsp.waitUntilRegistered() }
        try await Task.sleep(for: .milliseconds(20))
        stopped.cancel()
        await stopped.value
        #expect(unregistered.tsp.currentKey == nil)
    }
}

extension TspV1.EncryptionKey {
    /// The key published under another identifier than its fingerprint.
    fileprivate func with(identifier: String) -> TspV1.EncryptionKey {
        var key = self
        key.publicKeyIdentifier = identifier
        return key
    }
}
