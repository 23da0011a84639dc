import Foundation
import TokenetRPC
import TokenetTransport
import TokenetWire

/// User plus system CPU time of a process, from /proc/PID/stat.
func cpuSeconds(of pid: Int32) -> Double? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return nil }
    // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// `tokenet-bench client`: runs the cases against a benchmark server over one TLS connection.
struct BenchClient {
    let options: BenchOptions
    /// The server process, when known, so that the CPU time of both ends can be reported per message.
    var serverPID: Int32? = nil

    /// Messages per `Stream` call in the streaming case.
    static let streamBatch: UInt32 = 1000

    func runAndPrint() async throws {
        let results = try await run()
        for result in results { print(result.resultLine) }
    }

    func run() async throws -> [BenchResult] {
        guard let port = options.port else { throw BenchError("--port is needed") }
        let files = try options.credentials()
        let loop = try EventLoop(name: "bench-client", idlePoll: options.idlePoll)
        defer { loop.shutdown() }
        let context = try TLSContext(
            configuration: .client(
                certificateChainFile: files.certificate, privateKeyFile: files.key, trustedCAFile: files.ca)
        )
        let connection = try await TLSConnection.connect(host: "127.0.0.1", port: port, context: context, on: loop)
        let client = RPCClient(stream: connection)
        var results: [BenchResult] = []
        for benchCase in options.cases {
            let result: BenchResult
            switch benchCase {
            case .pingpong, .async64, .bulk16k, .bulk16k32: result = try await unary(benchCase, client)
            case .stream:
                result = try await withTaskExecutorPreference(client.executor) { try await stream(client) }
            case .transport:
                guard let echoPort = options.echoPort else { throw BenchError("the transport case needs --echo-port") }
                let echo = try await TLSConnection.connect(
                    host: "127.0.0.1", port: echoPort, context: context, on: loop)
                result = try await TransportEcho.measure(
                    echo, options: options, window: Window(options: options), cpu: cpuMeter)
                await echo.close()
            }
            // A row of zeros would read as a measurement; it is none.
            guard result.messages > 0 else {
                throw BenchError(
                    "the \(benchCase.rawValue) case completed no message within its \(options.seconds) s window; "
                        + "run it longer (--seconds) or on a quieter machine")
            }
            results.append(result)
        }
        await client.close()
        return results
    }

    /// The measured window: messages completing in [start, end) count.
    struct Window: Sendable {
        let start: UInt64
        let end: UInt64

        init(options: BenchOptions) {
            start = monotonicNanoseconds() + UInt64(options.warmup * 1e9)
            end = start + UInt64(options.seconds * 1e9)
        }

        func contains(_ time: UInt64) -> Bool { time >= start && time < end }
    }

    /// CPU seconds that this process and the server use during `window`.
    func cpuMeter(_ window: Window) -> Task<Double?, Never> {
        let processes = [getpid()] + (serverPID.map { [$0] } ?? [])
        return Task {
            func sleep(until time: UInt64) async {
                let now = monotonicNanoseconds()
                if time > now { try? await Task.sleep(for: .nanoseconds(Int64(time - now))) }
            }
            await sleep(until: window.start)
            let before = processes.map(cpuSeconds(of:))
            await sleep(until: window.end)
            let after = processes.map(cpuSeconds(of:))
            guard !before.contains(nil), !after.contains(nil) else { return nil }
            return zip(before, after).reduce(0) { $0 + ($1.1! - $1.0!) }
        }
    }

    /// `inflight` workers each make one call after the other; every echo is compared with what was sent.
    private func unary(_ benchCase: BenchCase, _ client: RPCClient) async throws -> BenchResult {
        let window = Window(options: options)
        let cpu = cpuMeter(window)
        let callOptions = options.callOptions
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for worker in 0..<benchCase.inflight {
                // On the connection's loop: each call is written and its reply read on that thread, no hop.
                group.addTask(executorPreference: client.executor) {
                    var latencies: [UInt64] = []
                    latencies.reserveCapacity(1 << 16)
                    var payload = BenchService.pattern(index: UInt32(worker), size: benchCase.size)
                    var sequence: UInt64 = 0
                    while true {
                        let sent = monotonicNanoseconds()
                        guard sent < window.end else { break }
                        // A per-call stamp, so a reply to another call can never pass the comparison.
                        let stamp = (sequence << 8) | UInt64(worker & 0xFF)
                        payload.withUnsafeMutableBytes { bytes in
                            withUnsafeBytes(of: stamp) {
                                bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(bytes.count)))
                            }
                        }
                        let reply = try await client.unary(
                            BenchV1.Bench.echo, BenchV1.EchoRequest(payload: payload), options: callOptions)
                        let received = monotonicNanoseconds()
                        guard reply.payload == payload else {
                            throw BenchError("call \(sequence) of worker \(worker): the echo differs from the request")
                        }
                        if window.contains(received) { latencies.append(received - sent) }
                        sequence += 1
                    }
                    return latencies
                }
            }
            var all: [UInt64] = []
            for try await part in group { all += part }
            return all
        }
        return BenchResult(
            impl: options.implementation, benchCase: benchCase, messages: latencies.count, seconds: options.seconds,
            latencies: latencies.sorted(),
            cpuSeconds: await cpu.value)
    }

    /// `Stream` calls one after the other; every message is checked against the pattern the server sends.
    private func stream(_ client: RPCClient) async throws -> BenchResult {
        let window = Window(options: options)
        let cpu = cpuMeter(window)
        let size = BenchCase.stream.size
        var messages = 0
        let expected = (0..<Self.streamBatch).map { BenchService.pattern(index: $0, size: size) }
        while monotonicNanoseconds() < window.end {
            let request = BenchV1.StreamRequest(count: Self.streamBatch, size: UInt32(size))
            var received: UInt32 = 0
            for try await reply in try await client.serverStreaming(
                BenchV1.Bench.stream, request, options: options.callOptions)
            {
                guard received < Self.streamBatch, reply.payload == expected[Int(received)] else {
                    throw BenchError("stream message \(received) differs from what the server sends")
                }
                received += 1
                if window.contains(monotonicNanoseconds()) { messages += 1 }
            }
            guard received == Self.streamBatch else {
                throw BenchError("the stream ended after \(received) of \(Self.streamBatch) messages")
            }
        }
        return BenchResult(
            impl: options.implementation, benchCase: .stream, messages: messages, seconds: options.seconds,
            latencies: [], cpuSeconds: await cpu.value
        )
    }
}
