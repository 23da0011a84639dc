import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet list` and `describe` of a server without a reflection service say that it has none, as grpcurl says the
/// server does not support reflection: the server's "unknown method /tokenet.reflection.v1.Reflection/ListServices"
/// named a method the person never asked for. The exit status stays UNIMPLEMENTED's (76).
@Suite(.timeLimit(.minutes(3))) struct NoReflectionTests {
    /// Runs `arguments` (after the address) against a server that serves only Health/Check.
    private static func run(_ arguments: [String]) async throws -> (ProcessResult, String) {
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws in HealthV1.HealthCheckResponse() }
        var address = ""
        let result = try await runTokenet(servedBy: router) {
            address = $0
            return [arguments[0], $0] + arguments.dropFirst() + ["--plaintext", "--deadline", "20s"]
        }
        return (result, address)
    }

    @Test(arguments: [["list"], ["list", "tokenet.health.v1.Health"], ["describe", "tokenet.health.v1.Health"]])
    func listAndDescribeSayTheServerHasNoReflection(arguments: [String]) async throws {
        let (result, address) = try await Self.run(arguments)
        #expect(result.status == 64 + 12, "\(result.stderr)")
        #expect(
            result.stderr
                == "ERROR: UNIMPLEMENTED: \(address) has no reflection service (tokenet.reflection.v1.Reflection), so "
                + "it cannot list or describe what it serves; tokenet call still reaches the methods this build of "
                + "tokenet knows\n")
        #expect(result.stdout.isEmpty)
    }

    /// A method this build does not know has no request type without reflection; one it knows by a close name is
    /// named, and the path is quoted with a card number in it masked, as everywhere else the command quotes it.
    @Test(arguments: [
        ("tokenet.health.v1.Health/Chek", "; did you mean tokenet.health.v1.Health/Check?"),
        ("Bench/Ech", "; did you mean tokenet.bench.v1.Bench/Echo?"),
        ("A4761000010000009/Get", ""),
    ])
    func callOfAnUnknownMethodNamesTheKnownOneMeant(method: String, suggestion: String) async throws {
        let (result, address) = try await Self.run(["call", method])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr
                == "tokenet: \(address) has no reflection service and this build of tokenet does not know "
                + "/\(maskPAN(method)), so its request type is unknown\(suggestion)\n")
    }

    /// `call` needs no reflection for a method this build knows.
    @Test func callStillReachesAKnownMethod() async throws {
        let (result, _) = try await Self.run(["call", "tokenet.health.v1.Health/Check"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{}\n")
    }
}
