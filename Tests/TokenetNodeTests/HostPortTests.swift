import Testing

@testable import TokenetNode

@Suite struct HostPortTests {
    @Test(arguments: [
        ("127.0.0.1:7001", "127.0.0.1", 7001),
        ("localhost:0", "localhost", 0),
        ("[::1]:65535", "::1", 65535),
        ("example.test:443", "example.test", 443),
    ])
    func parsesValidAddresses(text: String, host: String, port: Int) {
        let address = HostPort(parsing: text)
        #expect(address == HostPort(host: host, port: UInt16(port)))
        #expect(address?.description == text)
    }

    @Test(arguments: [
        "", "127.0.0.1", ":7001", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:70a", "::1:7001",
        "[::1]7001", "[::1", "host name:80", "127.0.0.1:+80", "127.0.0.1:000080",
    ])
    func rejectsInvalidAddresses(text: String) {
        #expect(HostPort(parsing: text) == nil)
    }

    /// What a listener binds: an IP address of either family, or localhost; never a name to look up.
    @Test func aListenerTakesAnIPAddressOrLocalhost() throws {
        for text in ["127.0.0.1:7001", "0.0.0.0:0", "localhost:7001", "[::1]:7001", "[::]:0", "[fd00::2]:1"] {
            #expect(try #require(HostPort(parsing: text)).hostIsIPOrLocalhost, "\(text)")
        }
        for text in ["example.test:443", "127.1:7001", "256.0.0.1:1", "[::1::2]:1", "[fe80::1%eth0]:1", "[tsp]:1"] {
            #expect(try !#require(HostPort(parsing: text)).hostIsIPOrLocalhost, "\(text)")
        }
    }

    /// A peer's address may name its host, which the transport looks up when it connects.
    @Test func aPeerMayBeNamed() throws {
        for text in [
            "127.0.0.1:7001", "localhost:7001", "tsp:7001", "issuer.example.test:443", "Wallet-1.local.:1",
            "[::1]:7001", "[2001:db8::7]:443",
        ] {
            #expect(try #require(HostPort(parsing: text)).hostIsIPOrName, "\(text)")
        }
        for text in ["[::g]:7001", "tsp!node:7001", "127.1:7001", "256.0.0.1:1", "-tsp:7001"] {
            #expect(try !#require(HostPort(parsing: text)).hostIsIPOrName, "\(text)")
        }
    }
}
