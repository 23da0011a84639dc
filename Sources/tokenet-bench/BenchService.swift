import Foundation
import TokenetRPC
import TokenetWire

/// The benchmark service: `Echo` returns its payload, `Stream` sends patterned payloads the client can check.
enum BenchService {
    static var router: RPCRouter {
        var router = RPCRouter()
        router.unary(BenchV1.Bench.echo) { request, _ in
            BenchV1.EchoResponse(payload: request.payload)
        }
        router.serverStreaming(BenchV1.Bench.stream) { request, writer, _ in
            for index in 0..<request.count {
                try await writer.send(BenchV1.EchoResponse(payload: pattern(index: index, size: Int(request.size))))
            }
        }
        return router
    }

    /// Byte `i` of message `index` is `(index + i) mod 256`: each message differs from its neighbours, so a lost,
    /// duplicated or reordered message fails the check.
    static func pattern(index: UInt32, size: Int) -> Data {
        Data((0..<size).map { UInt8(truncatingIfNeeded: Int(index) &+ $0) })
    }
}
