import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A call that ends INTERNAL because something failed inside the server reaches the server's failure log with its
/// cause (the peer sees only a generic message), as does a status of another code caused by a `ServerFailure`;
/// refusals and INTERNAL errors a handler already logged do not.
@Suite struct FailureLogTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    static var router: RPCRouter {
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            switch request.fString {
            case "crash": throw CocoaError(.fileNoSuchFile)
            case "caused": throw RPCError(.internal, "the store failed", cause: CocoaError(.fileReadCorruptFile))
            case "logged": throw RPCError(.internal, "already logged by the handler")
            case "refused": throw RPCError(.notFound, "no card with that id")
            case "full":
                throw RPCError(
                    .resourceExhausted, "the disk is full", cause: ServerFailure(CocoaError(.fileWriteOutOfSpace)))
            case "exhausted": throw RPCError(.resourceExhausted, "too many calls", cause: CocoaError(.fileLocking))
            case "module": throw ModuleError(rpcError: RPCError(.resourceExhausted, "the module's disk is full"))
            case "module-internal": throw ModuleError(rpcError: RPCError(.internal, "the module failed"))
            default: return request
            }
        }
        return router
    }

    @Test func internalFailuresAreLoggedWithTheirCause() async throws {
        let failures = Mutex<[CallFailure]>([])
        let server = RPCServer(router: Self.router, failureLog: { failure in failures.withLock { $0.append(failure) } })
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(
            client: PeerIdentity(role: .wallet, nodeID: "wallet-1"), server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        let serving = Task { await server.serve(serverEnd) }
        defer { serving.cancel() }
        let client = RPCClient(stream: clientEnd)
        let codes: [String: StatusCode] = [
            "refused": .notFound, "full": .resourceExhausted, "exhausted": .resourceExhausted,
            "module": .resourceExhausted,
        ]
        for text in ["crash", "caused", "logged", "refused", "full", "exhausted", "module", "module-internal"] {
            let error = await #expect(throws: RPCError.self) {
                _ = try await client.unary(Echo.unary, Scalars(fString: text))
            }
            #expect(error?.code == codes[text] ?? .internal, "\(text)")
        }
        _ = try await client.unary(Echo.unary, Scalars(fString: "fine"))

        // A server failure the caller can act on (a full disk) is logged whatever its status; a plain refusal with a
        // cause is not.
        let logged = failures.withLock { $0 }
        // A module's own error type that knows its status (`RPCErrorConvertible`) answers with it: it was INTERNAL.
        #expect(
            logged.map(\.status) == ["internal error", "the store failed", "the disk is full", "the module failed"])
        #expect(logged.allSatisfy { $0.method == "/tokenet.testing.v1.Echo/Unary" && !$0.traceID.isEmpty })
        #expect(logged.first?.cause.contains("NSCocoaErrorDomain") == true, "\(logged)")
        #expect(logged.dropFirst().first?.cause.contains("\(CocoaError(.fileReadCorruptFile))") == true, "\(logged)")
        #expect(logged.dropLast().last?.cause == "\(CocoaError(.fileWriteOutOfSpace))", "\(logged)")
        #expect(logged.last?.cause.contains("ModuleError") == true, "\(logged)")
    }

    struct ModuleError: RPCErrorConvertible {
        let rpcError: RPCError
    }
}
