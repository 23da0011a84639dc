import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// A second issuer node started by mistake with a running node's certificate registered again and replaced the
/// running node's key and BIN ranges: the running node's cards then failed eligibility ("not encrypted to the
/// issuer's registered key") until it was restarted. Its registration is now refused while the first holds the
/// notification stream, as its Subscribe was.
@Suite struct RegistrationInstanceTests {
    @Test(.timeLimit(.minutes(5))) func aSecondNodeCannotReplaceARunningNodesRegistration() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let node = PeerIdentity(role: .issuer, nodeID: "issuer-1")
        let issuers = TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: node))
        let otherKey = try RSAPrivateKey.generate()
        func register(_ instance: String, key: RSAPrivateKey = FakeIssuer.key) async -> RPCError? {
            do {
                _ = try await issuers.registerIssuer(
                    TspV1.RegisterIssuerRequest(
                        issuerID: "bank-a", displayName: "Bank A",
                        binRanges: [TspV1.BinRange(low: "411111", high: "411111")],
                        encryptionPublicKeyPem: try key.publicKey.pem(), instanceID: instance),
                    options: CallOptions(timeout: .seconds(120)))
                return nil
            } catch let error as RPCError {
                return error
            } catch {
                return RPCError(.unknown, "\(error)")
            }
        }
        // A registration of the other instance before the running node's stream opened (recorded as the issuer's):
        // the running node, once it holds the stream, still gets in.
        #expect(await register("node-b") == nil)
        let notifications = TspV1.Notifications.Client(TSPHarness.connect(tsp.router, as: node))
        let running = Task {
            var stream = try await notifications.subscribe(TspV1.SubscribeRequest(instanceID: "node-a"))
                .makeAsyncIterator()
            _ = try await stream.next()
        }
        defer { running.cancel() }
        // Once the running node's stream is open, another instance is refused, and the registration stays its own.
        let deadline = ContinuousClock.now + .seconds(240)
        var refused = await register("node-b")
        while refused == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            refused = await register("node-b")
        }
        #expect(refused?.code == .alreadyExists, "\(String(describing: refused))")
        #expect(
            refused?.message.contains(
                "runs already as another node (instance node-a, subscribed for ") == true,
            "\(String(describing: refused))")
        #expect(refused?.message.contains("two nodes share this certificate") == true)
        // The running node itself (a restart on its data directory), and a tool that names no instance, may.
        #expect(await register("node-a") == nil)
        #expect(await register("") == nil)
        // The refused registration leaves the running node's key in place.
        #expect(await register("node-b", key: otherKey)?.code == .alreadyExists)
        let database = try Database.openReadOnly(path: tsp.directory + "/tsp.sqlite")
        defer { try? database.close() }
        let stored = try database.queryOne("SELECT encryption_key_pem FROM issuers WHERE id = 'bank-a'")?.text(0)
        #expect(stored == (try FakeIssuer.key.publicKey.pem()))
    }

    /// A restarted TSP no longer knows which instance holds each stream: for a while after its start, the instance
    /// that registered the issuer keeps it against another, which registered first and took the key, the BIN ranges
    /// and the stream from the running node as it reconnected.
    @Test func aRestartedTSPKeepsTheRegisteringInstanceForAWhile() async throws {
        let first = try TSPHarness.make()
        func register(_ tsp: TSPHarness, _ instance: String) async -> RPCError? {
            do {
                _ = try await tsp.issuers.registerIssuer(
                    TspV1.RegisterIssuerRequest(
                        issuerID: "bank-a", displayName: "Bank A",
                        binRanges: [TspV1.BinRange(low: "411111", high: "411111")],
                        encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem(), instanceID: instance))
                return nil
            } catch let error as RPCError {
                return error
            } catch {
                return RPCError(.unknown, "\(error)")
            }
        }
        #expect(await register(first, "node-a") == nil)
        let restarted = try TSPHarness.make(directory: first.directory)
        let refused = await register(restarted, "node-b")
        #expect(refused?.code == .alreadyExists, "\(String(describing: refused))")
        #expect(
            refused?.message.contains("was registered by another node on this certificate (instance node-a)") == true,
            "\(String(describing: refused))")
        // The instance that registered it comes back as ever.
        #expect(await register(restarted, "node-a") == nil)
    }
}
