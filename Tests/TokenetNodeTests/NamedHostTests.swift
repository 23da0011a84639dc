import Testing
import TokenetRPC

/// The CLI reaches a node by a host name (a container's service name, say), looked up when it connects.
@Suite(.timeLimit(.minutes(3))) struct NamedHostTests {
    /// /etc/hosts answers localhost whatever its case; in capitals it is not the literal the transport knows without
    /// a lookup, so the call goes through one.
    @Test func aNodeIsReachedByName() async throws {
        var router = RPCRouter()
        ReflectionService(router: router).register(on: &router)
        let result = try await runTokenet(servedBy: router) { address in
            ["list", "LOCALHOST:" + address.split(separator: ":").last.map(String.init)!, "--plaintext"]
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "tokenet.reflection.v1.Reflection\n")
    }

    @Test func aNameThatDoesNotResolveIsNamedWithTheReason() async throws {
        let result = try await runTokenet(["list", "nosuch.invalid:7001", "--plaintext", "--deadline", "30s"])
        #expect(result.status == 1, "\(result.stderr)")
        // Without a DNS server that answers at all, the lookup's time runs out instead.
        #expect(
            result.stderr.hasPrefix("tokenet: cannot connect to nosuch.invalid:7001: cannot look up nosuch.invalid: ")
                || result.stderr.contains("looking up nosuch.invalid took longer than"),
            "\(result.stderr)")
    }
}
