import Foundation
import Synchronization
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// A node has more than one channel to a peer (its calls and its notification subscription to the TSP), and each
/// logged that the peer could not be reached and then that it was reached again: every line came twice.
@Suite struct NodeLinkLogTests {
    @Test(.timeLimit(.minutes(3))) func aPeerThatCannotBeReachedIsLoggedOnceWhateverTheChannels() async throws {
        let loop = try EventLoop(name: "test-node-link-log")
        defer { loop.shutdown() }
        let logs = MemoryLogSink()
        let context = try Self.contextOfATSPNobodyServes(node: "issuer-node", logs: logs, loop: loop)
        let calls = try context.channel(to: .tsp)
        let subscription = try context.channel(to: .tsp)
        for channel in [calls, subscription] {
            await #expect(throws: RPCError.self) {
                _ = try await channel.unary(
                    HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(3)))
            }
        }
        await calls.close()
        await subscription.close()
        let lines = logs.lines.filter { $0.contains("cannot reach the tsp-node") }
        // One line for the refused connections, whichever channel met them first. A loaded machine may cut a first
        // attempt short by its call's deadline, which is said first, and the reason of its own then follows once.
        let refused = lines.filter { !$0.contains("DEADLINE_EXCEEDED") }
        #expect(refused.count == 1, "\(logs.lines)")
        #expect(lines.count - refused.count <= 1, "\(logs.lines)")
    }

    /// A peer that is not up while the node starts, and never comes up: its channel says nothing more while its
    /// attempts fail the same way, and the warning comes once the start is over all the same, once.
    @Test(.timeLimit(.minutes(3))) func aPeerThatNeverComesUpIsWarnedOfOnceTheStartIsOver() async throws {
        let loop = try EventLoop(name: "test-node-never-up")
        defer { loop.shutdown() }
        let logs = MemoryLogSink()
        let outgoing = NodeOutgoing(startupGrace: .seconds(5))
        let context = try Self.contextOfATSPNobodyServes(
            node: "wallet-node", logs: logs, loop: loop, outgoing: outgoing)
        let channel = try context.channel(to: .tsp)
        await #expect(throws: RPCError.self) {
            _ = try await channel.unary(
                HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(60)))
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while !logs.lines.contains(where: { $0.contains("not reached since the node started") }),
            ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(20))
        }
        outgoing.cancelTasks()
        await channel.close()
        let early = logs.lines.filter { $0.contains("is not reachable yet (it may still be starting)") }
        let warned = logs.lines.filter { $0.contains("cannot reach the tsp-node") }
        #expect(warned.count == 1 && warned[0].contains(" warning "), "\(logs.lines)")
        // A machine loaded enough to make the first attempt after the start warns at once instead.
        if early.isEmpty {
            #expect(warned.first?.contains("(not reached since the node started)") == false, "\(logs.lines)")
        } else {
            #expect(early.count == 1 && early[0].contains(" info "), "\(logs.lines)")
            #expect(warned.first?.contains("(not reached since the node started)") == true, "\(logs.lines)")
        }
    }

    /// A plaintext node's context whose --tsp is a free port nobody listens on.
    /// A node's calls to a party that has been down a while still each make an attempt within a deadline of more
    /// than 1.2 s: its channel's attempts are at most a second apart (with jitter). With the 5 s of other channels,
    /// the sixth call on failed without one, and the TSP's stand-in decided for an issuer that was back.
    @Test(.timeLimit(.minutes(3))) func callsToAPartyDownAWhileEachMakeAnAttempt() async throws {
        let loop = try EventLoop(name: "test-node-peer-backoff")
        defer { loop.shutdown() }
        let context = try Self.contextOfATSPNobodyServes(node: "issuer-node", logs: MemoryLogSink(), loop: loop)
        let channel = try context.channel(to: .tsp)
        for call in 1...8 {
            let error = await #expect(throws: RPCError.self) {
                _ = try await channel.unary(
                    HealthV1.Health.check, HealthV1.HealthCheckRequest(),
                    options: CallOptions(timeout: .milliseconds(1300)))
            }
            #expect(
                error?.message.contains("no attempt was made") == false, "call \(call): \(String(describing: error))")
        }
        await channel.close()
    }

    static func contextOfATSPNobodyServes(
        node: String, logs: MemoryLogSink, loop: EventLoop, outgoing: NodeOutgoing = NodeOutgoing()
    ) throws -> NodeContext {
        let port = try FreePorts.run(of: 1)
        var options = NodeOptions()
        options.plaintext = true
        options.peers = [.tsp: HostPort(host: "127.0.0.1", port: UInt16(port))]
        return NodeContext(
            options: options, logger: Logger(node: node, sink: logs), dataDirectory: "", eventLoop: loop,
            outgoing: outgoing)
    }

    @Test func linkChangesAreNewsOncePerPeer() {
        let outgoing = NodeOutgoing()
        #expect(outgoing.news(.unreachable(reason: "refused"), peer: "tsp") != .none)
        #expect(outgoing.news(.unreachable(reason: "refused"), peer: "tsp") == .none)
        #expect(outgoing.news(.unreachable(reason: "refused"), peer: "issuer") != .none)
        #expect(outgoing.news(.reachable(afterFailedAttempts: 3), peer: "tsp") != .none)
        #expect(outgoing.news(.reachable(afterFailedAttempts: 2), peer: "tsp") == .none)
        #expect(outgoing.news(.unreachable(reason: "refused"), peer: "tsp") != .none)
        // Another kind of reason while still unreachable is news (also the first one after attempts cut short by
        // their calls, which have none); the same one again is not, nor another attempt cut short.
        #expect(outgoing.news(.unreachable(reason: "refused", kind: "io"), peer: "tsp") != .none)
        #expect(
            outgoing.news(.unreachable(reason: "certificate refused", kind: "certificateRefused"), peer: "tsp") != .none
        )
        #expect(
            outgoing.news(.unreachable(reason: "certificate refused", kind: "certificateRefused"), peer: "tsp") == .none
        )
        #expect(outgoing.news(.unreachable(reason: "the deadline passed"), peer: "tsp") == .none)
    }

    /// Parties started together wait for each other: while the node starts, a peer it cannot connect to is one not
    /// up yet (an info line), and a warning follows only if it still cannot be reached once the start is over. A
    /// refusal is a warning at once.
    @Test func aPeerNotUpWhileTheNodeStartsIsNoWarningUntilTheStartIsOver() {
        let outgoing = NodeOutgoing(startupGrace: .seconds(10))
        let start = ContinuousClock.now
        let refused = RPCChannel.LinkChange.unreachable(reason: "refused", kind: RPCChannel.unreachableKind)
        #expect(outgoing.news(refused, peer: "tsp", now: start) == .notYetReachable)
        #expect(outgoing.news(refused, peer: "tsp", now: start + .seconds(2)) == .none)
        #expect(
            outgoing.news(.reachable(afterFailedAttempts: 2), peer: "tsp", now: start + .seconds(3))
                == .reachable(afterStart: true))
        // Still unreachable after the start: the warning comes with the first failure past it, once.
        #expect(outgoing.news(refused, peer: "issuer", now: start + .seconds(1)) == .notYetReachable)
        #expect(outgoing.news(refused, peer: "issuer", now: start + .seconds(11)) == .unreachable)
        #expect(outgoing.news(refused, peer: "issuer", now: start + .seconds(12)) == .none)
        #expect(
            outgoing.news(.reachable(afterFailedAttempts: 9), peer: "issuer", now: start + .seconds(13))
                == .reachable(afterStart: false))
        // A refusal (another PKI) is a warning even while the node starts.
        let certificate = RPCChannel.LinkChange.unreachable(reason: "unknown ca", kind: "refused/certificateRefused")
        #expect(outgoing.news(certificate, peer: "wallet", now: start) == .unreachable)
        // Nor does the grace apply to a peer lost later.
        #expect(outgoing.news(refused, peer: "tsp", now: start + .seconds(20)) == .unreachable)
        // A peer said as not up yet whose channel says nothing more (its attempts fail the same way) is warned of
        // once the start is over, with the reason it was said with; once.
        #expect(outgoing.news(refused, peer: "bank-b", now: start + .seconds(1)) == .notYetReachable)
        #expect(outgoing.stillUnreachableAfterStart("bank-b") == "refused")
        #expect(outgoing.stillUnreachableAfterStart("bank-b") == nil)
        #expect(outgoing.news(refused, peer: "bank-b", now: start + .seconds(21)) == .none)
        // One reached meanwhile is not.
        #expect(outgoing.news(refused, peer: "bank-c", now: start + .seconds(1)) == .notYetReachable)
        _ = outgoing.news(.reachable(afterFailedAttempts: 1), peer: "bank-c", now: start + .seconds(2))
        #expect(outgoing.stillUnreachableAfterStart("bank-c") == nil)
    }

    /// The warning once the start is over quotes the latest failed attempt among the channels to the peer (a node
    /// has two: its calls and its subscription), not the first one's: a peer refused while it was starting, then
    /// found listening but not answering, is another matter to fix. An attempt cut short by its call's deadline says
    /// nothing of the peer, and is not quoted.
    @Test(.timeLimit(.minutes(3))) func theWarningAfterTheStartQuotesTheLatestFailure() async throws {
        let outgoing = NodeOutgoing(startupGrace: .seconds(10))
        let backoff = RPCChannel.Backoff(initial: .milliseconds(1), maximum: .milliseconds(5))
        let calls = RPCChannel(backoff: backoff, peer: "the tsp-node") {
            throw TransportError(.io, "connect failed: Connection refused", isConnectFailure: true)
        }
        let subscription = RPCChannel(backoff: backoff, peer: "the tsp-node") {
            try await Task.sleep(for: .milliseconds(50))
            throw TransportError(.handshakeFailed, "TLS handshake failed", details: ["unexpected eof"])
        }
        let hanging = RPCChannel(backoff: backoff, peer: "the tsp-node") {
            try await Task.sleep(for: .seconds(3600))
            throw CancellationError()
        }
        for channel in [calls, subscription, hanging] { outgoing.track(channel) }
        let first = RPCChannel.LinkChange.unreachable(reason: "refused", kind: RPCChannel.unreachableKind)
        #expect(outgoing.news(first, peer: "the tsp-node") == .notYetReachable)
        _ = try? await calls.unary(TestingV1.Echo.unary, TestingV1.Scalars())
        _ = try? await subscription.unary(TestingV1.Echo.unary, TestingV1.Scalars())
        _ = try? await hanging.unary(
            TestingV1.Echo.unary, TestingV1.Scalars(), options: CallOptions(timeout: .milliseconds(20)))
        #expect(calls.lastFailure?.reason == "connect failed: Connection refused")
        #expect(hanging.lastFailure == nil, "a deadline says nothing of the peer")
        #expect(outgoing.stillUnreachableAfterStart("the tsp-node") == "TLS handshake failed [unexpected eof]")
        for channel in [calls, subscription, hanging] { await channel.close() }
    }
}

/// A peer of another PKI: both sides say which CA is at fault, where they quoted OpenSSL alone ("self-signed
/// certificate in certificate chain" calling, "tlsv1 alert unknown ca" serving).
@Suite struct PeerOfAnotherPKITests {
    /// A wallet node's channel to the TSP at `listener`, with the untrusted PKI's wallet certificate and `ca`.
    static func walletChannel(
        to listener: RPCNodeListener, ca: String, logs: MemoryLogSink, loop: EventLoop
    ) throws -> RPCChannel {
        let pki = DevelopmentPKI.shared
        var options = NodeOptions()
        options.certificatePath = pki.untrustedPath("wallet.pem")
        options.privateKeyPath = pki.untrustedPath("wallet.key")
        options.caPath = ca
        options.peers = [.tsp: listener.boundAddress]
        let context = NodeContext(
            options: options, logger: Logger(node: "wallet-node", sink: logs), dataDirectory: "", eventLoop: loop)
        return try context.channel(to: .tsp)
    }

    @Test(.timeLimit(.minutes(3))) func bothSidesNameTheCA() async throws {
        let pki = DevelopmentPKI.shared
        let serverLogs = MemoryLogSink()
        let listener = try await NodeContextPeerRoleTests.serving("tsp", logs: serverLogs)
        let loop = try EventLoop(name: "test-node-other-pki")
        defer { loop.shutdown() }
        let logs = MemoryLogSink()
        let tsp = try Self.walletChannel(
            to: listener, ca: pki.untrustedPath("ca.pem"), logs: logs, loop: loop)
        await #expect(throws: RPCError.self) {
            _ = try await tsp.unary(
                HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(10)))
        }
        await tsp.close()
        try await offThePool { listener.stop() }
        let calling = logs.lines.first { $0.contains("cannot reach the tsp-node") } ?? ""
        #expect(
            calling.contains(
                "its certificate is not signed by the CA of --ca (\(pki.untrustedPath("ca.pem"))): both nodes need "
                    + "certificates of one PKI"), "\(logs.lines)")
        #expect(
            serverLogs.lines.contains { $0.contains("handshake failed: the peer does not trust this node's CA") },
            "\(serverLogs.lines)")
    }
}

extension PeerOfAnotherPKITests {
    /// The peer refuses this node's certificate, which it learns only after its own side of the TLS 1.3 handshake
    /// has ended: the peer is not "reached" (it never said hello), and the log says why, where it said "reached the
    /// tsp-node again" and the refusal showed at debug level only.
    @Test(.timeLimit(.minutes(3))) func aNodeWhoseCertificateThePeerRefusesIsNotReached() async throws {
        let pki = DevelopmentPKI.shared
        let listener = try await NodeContextPeerRoleTests.serving("tsp", logs: MemoryLogSink())
        let loop = try EventLoop(name: "test-node-refused-certificate")
        defer { loop.shutdown() }
        let logs = MemoryLogSink()
        let tsp = try Self.walletChannel(to: listener, ca: pki.path("ca.pem"), logs: logs, loop: loop)
        for _ in 0..<2 {
            let error = await #expect(throws: RPCError.self) {
                _ = try await tsp.unary(
                    HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(60)))
            }
            #expect(error?.code == .unavailable, "\(String(describing: error))")
            #expect(error?.message.contains("refused this client's certificate (unknown CA)") == true)
        }
        await tsp.close()
        try await offThePool { listener.stop() }
        let calling = logs.lines.filter { $0.contains("cannot reach the tsp-node") }
        #expect(calling.count == 1, "\(logs.lines)")
        #expect(
            calling.first?.contains("it does not trust the CA of this node's certificate (--cert)") == true,
            "\(logs.lines)")
        #expect(!logs.lines.contains { $0.contains("reached the tsp-node") && $0.contains("again") })
    }
}

/// OpenSSL's words, read for the PKI they point at, on each side.
@Suite struct PeerCertificateHintTests {
    @Test func theCAIsNamedByOpenSSLsWords() {
        let rejected = "peer certificate rejected: self-signed certificate in certificate chain [error:0A000086]"
        #expect(PeerCertificateHint.calling(rejected, ca: "pki/ca.pem")?.contains("CA of --ca (pki/ca.pem)") == true)
        // A client of another PKI, refused by this node.
        #expect(PeerCertificateHint.serving(rejected)?.contains("not signed by the CA of this node's --ca") == true)
        #expect(
            PeerCertificateHint.serving("TLS handshake failed [tlsv1 alert unknown ca]")?.contains("does not trust")
                == true)
        #expect(
            PeerCertificateHint.serving(
                "TLS handshake failed [error:0A0000C7:SSL routines::peer did not return a certificate]")?
                .hasPrefix("the peer presented no certificate: every client needs one of this deployment's CA") == true)
        #expect(PeerCertificateHint.serving("connection reset by peer") == nil)
        #expect(PeerCertificateHint.calling("connect failed: Connection refused (errno 111)", ca: nil) == nil)
    }

    /// An expired certificate is named as such on each side, with whose it is: a node whose own certificate had
    /// expired logged the peers' refusals, and its peers logged the handshakes they refused, with OpenSSL's words.
    @Test func anExpiredCertificateIsNamedWithWhoseItIs() {
        let refusedHere = "peer certificate rejected: certificate has expired"
        #expect(PeerCertificateHint.calling(refusedHere, ca: nil)?.hasPrefix("its certificate has expired") == true)
        #expect(PeerCertificateHint.serving(refusedHere)?.hasPrefix("the peer's certificate has expired") == true)
        let ownRefused = "read failed: the server refused this client's certificate (certificate expired)"
        #expect(
            PeerCertificateHint.calling(ownRefused, ca: nil)?.hasPrefix(
                "it refuses this node's certificate (--cert), which has expired") == true)
        let ownRefusedServing = "TLS handshake failed [error:0A000415:SSL routines::sslv3 alert certificate expired]"
        #expect(
            PeerCertificateHint.serving(ownRefusedServing)?.hasPrefix(
                "the peer refuses this node's certificate (--cert), which has expired") == true)
        #expect(
            PeerCertificateHint.calling("the server refused this client's certificate (unknown CA)", ca: nil)?
                .contains("does not trust the CA of this node's certificate") == true)
    }
}
