import Foundation
import TokenetTransport

/// The `transport` case: sequential 100-byte echoes over `TLSConnection` and `EventLoop`, with no frames, calls or
/// handler tasks. Set beside `pingpong` and the raw-TLS anchor in one sitting, it splits Tokenet's ping-pong cost
/// into what the transport and the Swift tasks that await it take, and what the RPC layer adds on top.
enum TransportEcho {
    /// Server side: every chunk goes back from the loop thread as it arrives (`receive`, `writeOnLoop`), with no
    /// task per message, the cheapest way Tokenet's transport can answer.
    static func serve(_ listener: TLSListener) async {
        for await connection in listener.connections {
            let echoing = connection.receive { result in
                switch result {
                case .success(let bytes?): connection.writeOnLoop(bytes) { _ in }
                case .success(nil), .failure: Task { await connection.close() }
                }
            }
            if !echoing { await connection.close() }
        }
    }

    /// Client side: one task on the connection's loop writes a stamped payload and reads until all of it is back,
    /// as a unary call's caller awaits its reply; every echo is compared with what was sent.
    static func measure(
        _ connection: TLSConnection, options: BenchOptions, window: BenchClient.Window,
        cpu meter: (BenchClient.Window) -> Task<Double?, Never>
    ) async throws -> BenchResult {
        let cpu = meter(window)
        let size = BenchCase.transport.size
        let latencies = try await withTaskExecutorPreference(connection.eventLoop) {
            var latencies: [UInt64] = []
            latencies.reserveCapacity(1 << 16)
            var payload = [UInt8](BenchService.pattern(index: 0, size: size))
            var received: [UInt8] = []
            received.reserveCapacity(size)
            var sequence: UInt64 = 0
            while true {
                let sent = monotonicNanoseconds()
                guard sent < window.end else { break }
                withUnsafeBytes(of: sequence) { stamp in
                    payload.withUnsafeMutableBytes { $0.copyMemory(from: stamp) }
                }
                try await connection.write(payload)
                received.removeAll(keepingCapacity: true)
                while received.count < size {
                    guard let chunk = try await connection.read() else {
                        throw BenchError("the echo server closed the connection after \(sequence) echoes")
                    }
                    received += chunk
                }
                // `==` compares the bytes in one loop; `elementsEqual` walked both arrays through generic iterators
                // (callgrind: about 2,000 instructions per echo), which the floor's figures counted as the transport's.
                guard received == payload else {
                    throw BenchError("echo \(sequence) differs from what was sent")
                }
                let done = monotonicNanoseconds()
                if window.contains(done) { latencies.append(done - sent) }
                sequence += 1
            }
            return latencies
        }
        return BenchResult(
            impl: options.implementation, benchCase: .transport, messages: latencies.count, seconds: options.seconds,
            latencies: latencies.sorted(), cpuSeconds: await cpu.value)
    }
}
