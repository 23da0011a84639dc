import Foundation
import Testing
import TokenetRPC
import TokenetWire

/// `tokenet call` against a server whose reflection describes whatever it is asked for, with a request type of its
/// own: what the command prints of that answer is bounded and masked, as a status message is.
@Suite(.timeLimit(.minutes(2))) struct HostileReflectionTests {
    @Test func aTypeNameFromThePeerIsCutAndTheMethodMasked() async throws {
        let typeName = "evil.v1.Request" + String(repeating: "x", count: 5_000) + "\u{1B}[2J"
        var router = RPCRouter()
        router.unary(ReflectionV1.Reflection.describeSymbol) { request, _ in
            let method = ReflectionV1.MethodDescription(
                name: "M", path: request.symbol, requestType: typeName, responseType: typeName)
            return ReflectionV1.DescribeSymbolResponse(
                kind: .method, name: request.symbol,
                service: ReflectionV1.ServiceDescription(name: "x.Y", methods: [method]))
        }
        let result = try await runTokenet(servedBy: router) { address in
            ["call", address, "x.Y/4761000010000009", "--plaintext", "--deadline", "20s"]
        }
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tokenet: /x.Y/************0009 uses evil.v1.Requestxxx"), "\(result.stderr)")
        #expect(result.stderr.contains("... (5019 characters, the last 3995 cut)"), "\(result.stderr)")
        #expect(!result.stderr.contains("0000"), "\(result.stderr)")
        #expect(result.stderr.utf8.count < 1_300, "\(result.stderr.utf8.count) bytes")
    }
}
