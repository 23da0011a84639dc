import Foundation
import Synchronization
import Testing
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// Lines logged inside a call handler, or in work done for a flow (`FlowTrace`), carry the flow's trace id without
/// being told, and so do the calls made there.
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

    /// Work done outside any handler for a flow (a notification's handling, the keys a token gets once active) logs
    /// under the flow's trace id and passes it on to the calls it makes; a trace id that is none is ignored, and
    /// the call starts a trace of its own.
    @Test func workUnderAFlowTraceLogsItAndPassesItOn() async throws {
        let sink = Lines()
        let logger = Logger(node: "wallet-node", sink: sink)
        let received = Mutex<[String]>([])
        var router = RPCRouter()
        router.unary(TestingV1.Echo.unary) { request, context in
            received.withLock { $0.append(context.traceID) }
            return request
        }
        let server = RPCServer(router: router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        Task { await server.serve(serverEnd) }
        let client = RPCClient(stream: clientEnd)
        try await FlowTrace.run("fedcba9876543210") {
            logger.info("handling a notification")
            _ = try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars())
        }
        try await FlowTrace.run("not a trace id") {
            logger.info("handling another")
            _ = try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars())
        }
        let lines = sink.lines.withLock { $0 }
        #expect(lines.count == 2)
        #expect(lines.first?.contains("trace_id=fedcba9876543210") == true, "\(lines)")
        #expect(lines.last?.contains("trace_id") == false, "\(lines)")
        let traces = received.withLock { $0 }
        #expect(traces.count == 2 && traces[0] == "fedcba9876543210", "\(traces)")
        #expect(traces.count == 2 && traces[1] != "fedcba9876543210" && Metadata.isValidTraceID(traces[1]), "\(traces)")
        await client.close()
    }
}
