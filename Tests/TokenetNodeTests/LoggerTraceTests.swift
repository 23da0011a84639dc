import Foundation
import Synchronization
import Testing
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// Lines logged inside a call handler carry the call's trace id without being told.
@Suite struct LoggerTraceTests {
    final class Lines: LogSink, Sendable {
        let lines = Mutex<[String]>([])
        func write(line: String) { lines.withLock { $0.append(line) } }
    }

    @Test func handlerLogLinesCarryTheCallsTraceID() async throws {
        let sink = Lines()
        let logger = Logger(node: "tsp-node", sink: sink)
        var router = RPCRouter()
        router.unary(TestingV1.Echo.unary) { request, _ in
            logger.info("handling")
            return request
        }
        let server = RPCServer(router: router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        Task { await server.serve(serverEnd) }
        let client = RPCClient(stream: clientEnd)
        var metadata = Metadata()
        metadata.set(Metadata.traceIDKey, .text("0123456789abcdef"))
        _ = try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars(), options: CallOptions(metadata: metadata))
        let lines = sink.lines.withLock { $0 }
        #expect(lines.count == 1)
        #expect(lines.first?.contains("0123456789abcdef") == true, "\(lines)")
    }
}
