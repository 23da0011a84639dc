import Foundation
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// The typed clients and server protocols generated from the `.proto` services, and the roles declared there.
@Suite struct GeneratedStubTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    struct EchoService: Echo.ServiceProtocol {
        func unary(_ request: Scalars, context: ServerContext) async throws -> Scalars {
            Scalars(fString: "unary:\(request.fString)")
        }

        func restricted(_ request: Scalars, context: ServerContext) async throws -> Scalars {
            Scalars(fString: "restricted for \(context.peer?.role.rawValue ?? "nobody")")
        }

        func serverStream(
            _ request: Scalars,
            responses: ResponseWriter<Scalars>,
            context: ServerContext
        ) async throws {
            for index in 0..<request.fUint32 { try await responses.send(Scalars(fUint32: index)) }
        }

        func clientStream(_ requests: RequestStream<Scalars>, context: ServerContext) async throws -> Scalars {
            var count: UInt32 = 0
            for try await _ in requests { count += 1 }
            return Scalars(fUint32: count)
        }

        func bidi(
            _ requests: RequestStream<TestingV1.Choice>,
            responses: ResponseWriter<TestingV1.Choice>,
            context: ServerContext
        ) async throws {
            for try await request in requests { try await responses.send(request) }
        }
    }

    static func client(as role: PeerRole) -> Echo.Client {
        var router = RPCRouter()
        EchoService().register(on: &router)
        let server = RPCServer(router: router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(client: PeerIdentity(role: role, nodeID: "\(role)-1"))
        Task { await server.serve(serverEnd) }
        return Echo.Client(RPCClient(stream: clientEnd))
    }

    @Test func typedClientCallsEveryMethodKind() async throws {
        let echo = Self.client(as: .wallet)
        #expect(try await echo.unary(Scalars(fString: "x")).fString == "unary:x")
        var streamed: [UInt32] = []
        for try await response in try await echo.serverStream(Scalars(fUint32: 3)) { streamed.append(response.fUint32) }
        #expect(streamed == [0, 1, 2])
        let counted = try await echo.clientStream { writer in
            for _ in 0..<4 { try await writer.send(Scalars()) }
        }
        #expect(counted.fUint32 == 4)
        let (requests, responses) = try await echo.bidi()
        try await requests.send(TestingV1.Choice(pick: .number(9)))
        requests.finish()
        var echoed: [TestingV1.Choice] = []
        for try await response in responses { echoed.append(response) }
        #expect(echoed == [TestingV1.Choice(pick: .number(9))])
    }

    @Test func rolesDeclaredInTheProtoAreEnforced() async throws {
        #expect(Echo.restricted.allowedRoles == ["operator", "issuer"])
        #expect(Echo.unary.allowedRoles == [])
        let operatorClient = Self.client(as: .operator)
        #expect(try await operatorClient.restricted(Scalars()).fString == "restricted for operator")
        let walletClient = Self.client(as: .wallet)
        do {
            _ = try await walletClient.restricted(Scalars())
            Issue.record("a wallet called an operator-only method")
        } catch let error as RPCError {
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains("role wallet may not call /tokenet.testing.v1.Echo/Restricted"))
        }
        #expect(try await walletClient.unary(Scalars()).fString == "unary:")
    }
}
