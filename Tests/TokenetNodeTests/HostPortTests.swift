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

    @Test func onlyIPv4AndLocalhostAreForTheTransport() throws {
        for text in ["127.0.0.1:7001", "0.0.0.0:0", "localhost:7001"] {
            #expect(try #require(HostPort(parsing: text)).hostIsIPv4OrLocalhost, "\(text)")
        }
        for text in ["[::1]:7001", "example.test:443", "127.1:7001", "256.0.0.1:1"] {
            #expect(try !#require(HostPort(parsing: text)).hostIsIPv4OrLocalhost, "\(text)")
        }
    }

    /// A peer's address may name its host, which the transport looks up when it connects.
    @Test func aPeerMayBeNamed() throws {
        for text in ["127.0.0.1:7001", "localhost:7001", "tsp:7001", "issuer.example.test:443", "Wallet-1.local.:1"] {
            #expect(try #require(HostPort(parsing: text)).hostIsIPv4OrName, "\(text)")
        }
        for text in ["[::1]:7001", "tsp_node:7001", "127.1:7001", "256.0.0.1:1", "-tsp:7001"] {
            #expect(try !#require(HostPort(parsing: text)).hostIsIPv4OrName, "\(text)")
        }
    }
}
