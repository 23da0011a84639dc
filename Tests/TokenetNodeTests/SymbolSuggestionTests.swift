import Foundation
import Testing
import TokenetRPC
import TokenetWire

/// `tokenet describe` and `tokenet list` of a symbol the node does not serve name the symbols meant when the node's
/// reflection lists some by a close name; the node's bare NOT_FOUND left the full name to be looked up. The exit
/// status stays NOT_FOUND's (69).
@Suite(.timeLimit(.minutes(3))) struct SymbolSuggestionTests {
    /// Runs `command` for `symbol` against a server with reflection that serves Health/Check and Echo/Unary.
    private static func run(_ command: String, _ symbol: String) async throws -> ProcessResult {
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws in HealthV1.HealthCheckResponse() }
        router.unary(TestingV1.Echo.unary) { request, _ in request }
        ReflectionService(router: router).register(on: &router)
        return try await runTokenet(servedBy: router) { [command, $0, symbol, "--plaintext", "--deadline", "20s"] }
    }

    /// The node's message, which names a path without its leading `/`.
    private static func notFound(_ symbol: String) -> String {
        "ERROR: NOT_FOUND: this node serves no service, method, message or enum named '\(symbol.trimmingPrefix("/"))'"
    }

    @Test(arguments: [
        ("Health", "tokenet.health.v1.Health"),
        ("tokenet.health.v1.Helth", "tokenet.health.v1.Health"),
        ("Health.Check", "tokenet.health.v1.Health.Check"),
        ("/tokenet.health.v1.Health/Chek", "tokenet.health.v1.Health.Check"),
        ("v1.Echo.Unary", "tokenet.testing.v1.Echo.Unary"),
        ("scalars", "tokenet.testing.v1.Scalars"),
        ("Colour", "tokenet.testing.v1.Color"),
    ])
    func describeSuggestsACloseName(symbol: String, meant: String) async throws {
        let result = try await Self.run("describe", symbol)
        #expect(result.status == 64 + 5, "\(result.stderr)")
        #expect(result.stderr == Self.notFound(symbol) + "; did you mean \(meant)?\n")
        #expect(result.stdout.isEmpty)
    }

    @Test func listSuggestsACloseServiceName() async throws {
        let result = try await Self.run("list", "Helth")
        #expect(result.status == 64 + 5, "\(result.stderr)")
        #expect(result.stderr == Self.notFound("Helth") + "; did you mean tokenet.health.v1.Health?\n")
    }

    /// `list` and `describe` take a package, so a slip in a package's name is suggested like one in a service's.
    @Test(arguments: [
        ("list", "tokenet.helth", "tokenet.health"), ("describe", "tokenet.testing.v2", "tokenet.testing.v1"),
    ])
    func aSlipInAPackageSuggestsThePackage(command: String, symbol: String, meant: String) async throws {
        let result = try await Self.run(command, symbol)
        #expect(result.status == 64 + 5, "\(result.stderr)")
        #expect(result.stderr == Self.notFound(symbol) + "; did you mean \(meant)?\n")
    }

    /// Nothing close, or a name too short to be told from others: the node's message stands alone.
    @Test(arguments: ["Zzz", "tokenet.testing.v2.Scalars", "Get"])
    func aNameCloseToNoneKeepsTheNodesMessage(symbol: String) async throws {
        let result = try await Self.run("describe", symbol)
        #expect(result.status == 64 + 5, "\(result.stderr)")
        #expect(result.stderr == Self.notFound(symbol) + "\n")
    }

    /// A package is not a symbol, but `list` and `describe` print its services.
    @Test func aPackageListsItsServices() async throws {
        let listed = try await Self.run("list", "tokenet")
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(
            listed.stdout == "tokenet.health.v1.Health\ntokenet.reflection.v1.Reflection\ntokenet.testing.v1.Echo\n")
        let one = try await Self.run("list", "tokenet.testing.v1")
        #expect(one.stdout == "tokenet.testing.v1.Echo\n", "\(one.stderr)")

        let described = try await Self.run("describe", "tokenet.health")
        #expect(described.status == 0, "\(described.stderr)")
        #expect(
            described.stdout.hasPrefix("tokenet.health is a package, with 1 service:\n  tokenet.health.v1.Health\n"))
        #expect(described.stdout.hasSuffix(" SERVICE describes one)\n"), "\(described.stdout)")
        // Part of a package's name is no package.
        let part = try await Self.run("list", "tokenet.heal")
        #expect(part.status == 64 + 5, "\(part.stderr)")
    }

    /// A name as descriptors write it, with a leading dot (`.pkg.Message`, a field's `type_name`), is the symbol.
    @Test func aLeadingDotIsTakenAsTheFullName() async throws {
        let described = try await Self.run("describe", ".tokenet.health.v1.Health")
        #expect(described.status == 0, "\(described.stderr)")
        #expect(described.stdout.contains("service tokenet.health.v1.Health {"), "\(described.stdout)")
        let listed = try await Self.run("list", ".tokenet.health.v1.Health")
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.hasPrefix("tokenet.health.v1.Health.Check("), "\(listed.stdout)")
        let called = try await Self.run("call", ".tokenet.health.v1.Health/Check")
        #expect(called.status == 0, "\(called.stderr)")
        #expect(called.stdout == "{}\n", "\(called.stdout)")
    }

    /// Dots alone name nothing: refused as an empty name is, before connecting.
    @Test func dotsAloneAreAnEmptyName() async throws {
        for (command, name) in [("list", "SERVICE"), ("describe", "SYMBOL")] {
            let result = try await runTokenet([command, "127.0.0.1:1", ".", "--plaintext"])
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("tokenet: \(command): \(name) is empty\n"), "\(result.stderr)")
        }
    }
}
