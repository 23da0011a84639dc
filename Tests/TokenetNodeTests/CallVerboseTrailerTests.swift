import Foundation
import Testing
import TokenetRPC
import TokenetWire

/// `tokenet call -v` prints the trailers of the node's status (`ServerContext.addTrailer`), text and bytes, with a
/// card number in a text value masked.
@Suite(.timeLimit(.minutes(3))) struct CallVerboseTrailerTests {
    @Test func theTrailersOfTheStatusArePrinted() async throws {
        var router = RPCRouter()
        router.unary(TestingV1.Echo.unary) { request, context in
            try context.addTrailer("decided-by", .text("rule for 4761000010000009"))
            try context.addTrailer("score-bin", .binary(Data([1, 2, 3])))
            return request
        }
        ReflectionService(router: router).register(on: &router)
        let result = try await runTokenet(servedBy: router) { address in
            ["call", address, "tokenet.testing.v1.Echo/Unary", "-v", "--plaintext", "--deadline", "20s"]
        }
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let trailers = try #require(lines.firstIndex(of: "Response trailers (2 entries):"), "\(lines)")
        #expect(
            Array(lines[(trailers + 1)...].prefix(2))
                == ["  decided-by: rule for ************0009", "  score-bin: AQID (3 bytes)"], "\(lines)")
        #expect(lines.last?.hasSuffix(": OK") == true, "\(lines)")
        #expect(lines.contains { $0.hasSuffix(": no identity, over plaintext") }, "\(lines)")
    }
}
