import Testing

@testable import TokenetTransport

/// Host names for peers' addresses: checked as DNS writes them, looked up off the event loop, IPv4 answers first.
@Suite struct HostResolverTests {
    @Test(arguments: [
        "tsp", "tsp-node", "tsp.internal", "TSP.Example.COM", "a1.b2.c3d", "node-1.local.", "tsp_node", "project_tsp_1",
        String(repeating: "a", count: 63) + ".x",
    ])
    func hostNames(_ name: String) {
        #expect(HostResolver.isHostName(name))
    }

    @Test(arguments: [
        "", ".", "-tsp", "tsp-", "tsp..internal", "999.0.0.1", "1.2.3", "127.0.0.1", "::1", "tsp node",
        "tsp/1", "ünï.example", String(repeating: "a", count: 64), String(repeating: "a.", count: 126) + "abc",
    ])
    func notHostNames(_ text: String) {
        #expect(!HostResolver.isHostName(text))
    }

    @Test func anIPv4AddressOrLocalhostNeedsNoLookUp() async throws {
        #expect(try await HostResolver.address(of: "10.1.2.3", within: .seconds(1)) == "10.1.2.3")
        #expect(try await HostResolver.address(of: "localhost", within: .seconds(1)) == "127.0.0.1")
    }

    /// /etc/hosts answers localhost whatever its case: in capitals it is not the literal the transport knows, so it
    /// goes through the lookup.
    @Test func aNameIsLookedUp() async throws {
        #expect(try await HostResolver.address(of: "LOCALHOST", within: .seconds(10)) == "127.0.0.1")
    }

    /// `.invalid` never resolves (RFC 2606). Without a DNS server that answers at all, the lookup's time runs out
    /// instead, which is the other refusal the caller can get.
    @Test func anUnknownNameIsRefusedWithTheReason() async {
        let error = await #expect(throws: TransportError.self) {
            _ = try await HostResolver.address(of: "nosuch.invalid", within: .seconds(15))
        }
        let refused =
            error?.code == .invalidAddress && error?.message.hasPrefix("cannot look up nosuch.invalid: ") == true
        #expect(refused || error?.code == .timeout, "\(String(describing: error))")
    }

    /// A connection attempt given up (its call's deadline, say) does not wait for the lookup to end.
    @Test func aCancelledLookUpEndsAtOnce() async {
        let lookUp = Task { try await HostResolver.address(of: "nosuch.invalid", within: .seconds(60)) }
        lookUp.cancel()
        let error = await #expect(throws: TransportError.self) { _ = try await lookUp.value }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
    }

    @Test func neitherAnAddressNorANameIsRefused() async {
        await #expect(throws: TransportError(.invalidAddress, "tsp!node is not an IP address or a host name")) {
            _ = try await HostResolver.address(of: "tsp!node", within: .seconds(1))
        }
    }

    @Test func aConnectionIsMadeToANamedHost() async throws {
        let loop = try EventLoop(name: "test-resolve")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        let client = try await PlainConnection.connect(host: "LOCALHOST", port: listener.port, on: loop)
        var accepted = listener.connections.makeAsyncIterator()
        let server = try #require(await accepted.next())
        try await client.write([7, 8, 9])
        #expect(try await server.read() == [7, 8, 9])
        await client.close()
        await server.close()
        await listener.close()
    }
}
