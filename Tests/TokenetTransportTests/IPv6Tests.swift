import CTokenetShims
import Glibc
import Testing

@testable import TokenetTransport

/// Whether this machine has an IPv6 loopback to test on (a container may run without IPv6).
let ipv6LoopbackAvailable: Bool = {
    let fd = ctk_tcp_socket_family(AF_INET6)
    guard fd >= 0 else { return false }
    defer { Glibc.close(fd) }
    return ctk_bind_ip(fd, "::1", 0) == 0
}()

/// IPv6: listeners and connections on IPv6 addresses, a dual-stack listener's IPv4 peers, and the handshake limit's
/// per-network count.
@Suite(.timeLimit(.minutes(3))) struct IPv6Tests {
    let certs = CertificateFixture.shared

    @Test func addressesOfBothFamiliesAreTakenWithoutALookUp() throws {
        #expect(try Socket.ipAddress("::1") == ("::1", AF_INET6))
        #expect(try Socket.ipAddress("2001:db8::7") == ("2001:db8::7", AF_INET6))
        #expect(try Socket.ipAddress("10.0.0.1") == ("10.0.0.1", AF_INET))
        #expect(try Socket.ipAddress("localhost") == ("127.0.0.1", AF_INET))
        for text in ["[::1]", "fe80::1%eth0", "::g", "tsp", "127.1"] {
            #expect(throws: TransportError.self, "\(text)") { try Socket.ipAddress(text) }
        }
        #expect(Socket.display(host: "::1", port: 7001) == "[::1]:7001")
        #expect(Socket.display(host: "10.0.0.1", port: 7001) == "10.0.0.1:7001")
    }

    @Test func anIPv6AddressNeedsNoLookUp() async throws {
        #expect(try await HostResolver.address(of: "::1", within: .seconds(1)) == "::1")
        #expect(try await HostResolver.address(of: "fd00::2", within: .seconds(1)) == "fd00::2")
    }

    /// The lookup takes IPv6 answers as well as IPv4 ones (getaddrinfo answers a numeric host with itself).
    @Test func theLookUpTakesIPv6Answers() throws {
        #expect(try HostResolver.lookUp("::1").get() == ["::1"])
        #expect(try HostResolver.lookUp("2001:db8:0:0::7").get() == ["2001:db8::7"])
        #expect(try HostResolver.lookUp("127.0.0.1").get() == ["127.0.0.1"])
    }

    @Test(.enabled(if: ipv6LoopbackAvailable, "this machine has no IPv6 loopback"))
    func mutualTLSOverIPv6Loopback() async throws {
        let loop = try EventLoop(name: "test-ipv6")
        defer { loop.shutdown() }
        let listener = try await TLSListener.bind(
            host: "::1", context: certs.context(certs.server("tsp")), on: loop)
        let client = try await TLSConnection.connect(
            host: "::1", port: listener.port, context: certs.context(certs.client("wallet")), on: loop)
        var connections = listener.connections.makeAsyncIterator()
        let served = try #require(await connections.next())
        #expect(client.peer == PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        #expect(served.peer == PeerIdentity(role: .wallet, nodeID: "wallet-1"))
        try await client.write([1, 2, 3])
        #expect(try await served.read() == [1, 2, 3])
        await client.close()
        await served.close()
        await listener.close()
    }

    /// A listener on `::` also takes IPv4 connections (unless the system sets bindv6only), and an IPv4 peer seen
    /// through it (`::ffff:127.0.0.1`) is counted and named as the IPv4 address it is.
    @Test(.enabled(if: ipv6LoopbackAvailable, "this machine has no IPv6 loopback"))
    func aDualStackListenerTakesIPv4Peers() async throws {
        let loop = try EventLoop(name: "test-dual-stack")
        defer { loop.shutdown() }
        let (failures, sink) = AsyncStream<TransportError>.makeStream()
        let listener = try await TLSListener.bind(
            host: "::", context: certs.context(certs.server("tsp")), on: loop,
            options: TLSConnection.Options(handshakeTimeout: .seconds(3600)),
            onHandshakeFailure: { failure, _ in sink.yield(failure) },
            handshakesPerAddress: 1)
        var bindsBoth: [UInt8] = [0]
        if let file = fopen("/proc/sys/net/ipv6/bindv6only", "r") {
            bindsBoth[0] = UInt8(fgetc(file))
            fclose(file)
        }
        try #require(bindsBoth[0] == UInt8(ascii: "0"), "net.ipv6.bindv6only is set: [::] takes IPv6 only")

        let silent = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        let second = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        var reported = failures.makeAsyncIterator()
        let refusal = try #require(await reported.next())
        #expect(refusal.code == .tooManyHandshakes)
        #expect(refusal.message.hasPrefix("127.0.0.1 already has 1 TLS handshakes in progress, the most one address"))
        #expect((try? await second.read()) == nil, "the refused connection was not closed")
        await silent.abort()
        _ = await reported.next()

        let client = try await TLSConnection.connect(
            host: "127.0.0.1", port: listener.port, context: certs.context(certs.client("issuer")), on: loop)
        var connections = listener.connections.makeAsyncIterator()
        let served = try #require(await connections.next())
        #expect(served.peer == PeerIdentity(role: .issuer, nodeID: "issuer-1"))
        await client.close()
        await served.close()
        await second.abort()
        await listener.close()
    }

    /// One IPv6 host usually holds a whole /64: handshakes are counted per /64, so addresses of one network share a
    /// count and another network has its own.
    @Test func handshakesFromIPv6AreCountedPerSlash64() {
        let limit = HandshakeLimit(limit: 2)
        func source(_ text: String) -> HandshakeLimit.Source {
            var address = in6_addr()
            precondition(inet_pton(AF_INET6, text, &address) == 1)
            let bytes = withUnsafeBytes(of: &address) { Array($0.prefix(8)) }
            return HandshakeLimit.Source(bytes: bytes)
        }
        #expect(limit.begin(from: source("2001:db8:1:2::1")).refusal == nil)
        #expect(limit.begin(from: source("2001:db8:1:2:ffff::9")).refusal == nil)
        let refused = limit.begin(from: source("2001:db8:1:2:abcd::1")).refusal
        #expect(
            refused?.message
                == "2001:db8:1:2::/64 already has 2 TLS handshakes in progress, the most one IPv6 /64 network may "
                + "have; its connection was closed before the handshake")
        #expect(limit.begin(from: source("2001:db8:1:3::1")).refusal == nil)
        limit.end(source("2001:db8:1:2::1"))
        #expect(limit.begin(from: source("2001:db8:1:2::5")).refusal == nil)
        #expect(HandshakeLimit.Source(bytes: []).description == "a peer without an IP address")
        #expect(HandshakeLimit.Source(bytes: [10, 0, 0, 7]).description == "10.0.0.7")
    }

    @Test(.enabled(if: ipv6LoopbackAvailable, "this machine has no IPv6 loopback"))
    func anIPv6LoopbackPeerIsOnLoopback() throws {
        let sockets = try SocketPair(host: "::1")
        defer { withExtendedLifetime(sockets) {} }
        let server = sockets.server
        #expect(ctk_peer_is_loopback(server) == 1)
        var address = [UInt8](repeating: 0, count: 16)
        #expect(ctk_peer_address(server, &address) == 16)
        #expect(address == [UInt8](repeating: 0, count: 15) + [1])
    }
}
