import Foundation
import Synchronization
import TokenetNode
import TokenetRPC
import TokenetTSP
import TokenetTransport
import TokenetWire

/// Runs the configured runs one after the other and prints one line per run.
struct BrokerBench {
    let options: BrokerBenchOptions

    func run() async throws {
        let root =
            options.dataDirectory
            ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("tokenet-broker-bench-\(ProcessInfo.processInfo.processIdentifier)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { InterruptCleanup.removeUnlessStopping(root) }
        // Ctrl-C stops the certificate script (in a process group of its own) and removes the directory with the
        // PKI's keys.
        let cleanup = InterruptCleanup(tool: "tokenet-broker-bench")
        defer { withExtendedLifetime(cleanup) {} }
        cleanup.removeOnStop(root)
        let pki = root + "/pki"
        try BrokerBenchPKI.make(pki, wallets: options.subscribers.max() ?? 1, cleanup: cleanup)
        print(
            "== \(Date()) \(ProcessInfo.processInfo.activeProcessorCount) cores, load avg before: \(loadAverage()), "
                + "data in \(root), messages=\(options.messages) publishers=\(options.publishers) "
                + "window=\(options.window) outstanding=\(options.outstanding)")
        for subscribers in options.subscribers {
            let directory = root + "/run-\(subscribers)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let line = try await BrokerBenchRun(
                options: options, subscribers: subscribers, directory: directory, pki: pki
            ).run()
            print(line)
        }
        print("== load avg after: \(loadAverage())")
    }
}

/// One run: a fresh broker, `subscribers` TLS subscribers, `options.messages` messages.
struct BrokerBenchRun {
    let options: BrokerBenchOptions
    let subscribers: Int
    let directory: String
    let pki: String

    func run() async throws -> String {
        let logger = Logger(node: "broker-bench", level: .warning)
        let broker = try NotificationBroker.open(
            databasePath: directory + "/tsp.sqlite",
            retention: NotificationRetention(maxQueued: options.messages + 1), logger: logger)
        let idlePoll = Duration.microseconds(options.idlePollMicroseconds)
        let serverLoop = try EventLoop(name: "broker-bench-server", idlePoll: idlePoll)
        let clientLoop = try EventLoop(name: "broker-bench-clients", idlePoll: idlePoll)
        let serverContext = try TLSContext(
            configuration: .server(
                certificateChainFile: pki + "/tsp.pem", privateKeyFile: pki + "/tsp.key",
                trustedCAFile: pki + "/ca.pem"))
        let listener = try await TLSListener.bind(host: "127.0.0.1", port: 0, context: serverContext, on: serverLoop)
        var router = RPCRouter()
        broker.register(on: &router)
        let server = RPCServer(router: router)
        let serving = Task { await server.serve(listener: listener) }

        let total = options.messages
        let credits = Credits(options.outstanding)
        let acknowledged = Counter()
        let (done, finish) = AsyncStream<Void>.makeStream()
        var handlers: [TimingHandler] = []
        var running: [Task<Void, Never>] = []
        var channels: [RPCChannel] = []
        for index in 1...subscribers {
            let context = try TLSContext(
                configuration: .client(
                    certificateChainFile: pki + "/wallet-\(index).pem", privateKeyFile: pki + "/wallet-\(index).key",
                    trustedCAFile: pki + "/ca.pem"))
            let port = listener.port
            let channel = RPCChannel {
                try await TLSConnection.connect(host: "127.0.0.1", port: port, context: context, on: clientLoop)
            }
            let handler = TimingHandler { count in
                credits.release(count)
                if acknowledged.add(count) >= total { finish.yield() }
            }
            let subscriber = NotificationSubscriber(
                tsp: channel, handler: handler,
                processed: try ProcessedNotificationLog(path: directory + "/journal-\(index).log"), logger: logger,
                options: .init(maxInFlight: UInt32(options.window), onAcknowledged: { handler.acknowledged($0) }))
            handlers.append(handler)
            channels.append(channel)
            running.append(Task { await subscriber.run() })
        }
        for index in 1...subscribers {
            while !broker.figures(of: "wallet/wallet-\(index)").connected {
                try await Task.sleep(for: .milliseconds(10))
            }
        }

        let cpuBefore = processCPUSeconds()
        let commitsBefore = broker.commitFigures
        let started = nanoseconds()
        let next = Counter()
        let publishLatencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<options.publishers {
                group.addTask {
                    var latencies: [UInt64] = []
                    while true {
                        let number = next.add(1) - 1
                        guard number < total else { return latencies }
                        await credits.acquire()
                        let publishedAt = nanoseconds()
                        var message = TspV1.Notification()
                        message.sender = "TNS"
                        message.topic = "D1_NOTIFICATION"
                        message.messageType = "TRANSACTION_NOTIFICATION"
                        message.cardID = "card-\(number % 4096)"
                        message.body = TimingHandler.body(publishedAt: publishedAt)
                        let recipient = "wallet/wallet-\(number % subscribers + 1)"
                        try await broker.publish(message, to: [recipient])
                        latencies.append(nanoseconds() - publishedAt)
                    }
                }
            }
            var all: [UInt64] = []
            for try await latencies in group { all += latencies }
            return all
        }
        for await _ in done { break }
        let elapsed = Double(nanoseconds() - started) / 1_000_000_000
        let cpu = processCPUSeconds() - cpuBefore
        let commits = broker.commitFigures.commits - commitsBefore.commits
        let commitSeconds = broker.commitFigures.seconds - commitsBefore.seconds

        for task in running { task.cancel() }
        for channel in channels { await channel.close() }
        server.shutdown()
        await listener.close()
        serving.cancel()
        broker.shutDown()

        let handled = percentiles(handlers.flatMap { $0.latencies.handled })
        let acked = percentiles(handlers.flatMap { $0.latencies.acknowledged })
        let publish = percentiles(publishLatencies)
        func ms(_ value: Double) -> String { String(format: "%.1f", value) }
        return "subscribers=\(subscribers) messages=\(total) elapsed=\(String(format: "%.2f", elapsed))s "
            + "rate=\(Int(Double(total) / elapsed)) msg/s | publish→ack p50=\(ms(acked.p50))ms "
            + "p99=\(ms(acked.p99))ms | publish→handled p50=\(ms(handled.p50))ms p99=\(ms(handled.p99))ms | "
            + "publish returns p50=\(ms(publish.p50))ms p99=\(ms(publish.p99))ms | commits=\(commits) "
            + "(\(commits == 0 ? 0 : total / commits) msg/commit incl. ack-only commits, "
            + "\(String(format: "%.1f", commits == 0 ? 0 : commitSeconds / Double(commits) * 1000))ms each) | "
            + "cpu=\(String(format: "%.2f", cpu))s (\(String(format: "%.0f", cpu / elapsed * 100))% of one core)"
    }
}

/// A development PKI: Tools/gen-certs for the CA and the TSP, plus one wallet certificate per subscriber
/// (`tokenet://wallet/wallet-N`), each subscriber being its own queue.
enum BrokerBenchPKI {
    static func make(_ directory: String, wallets: Int, cleanup: InterruptCleanup) throws {
        try run("/bin/bash", [try genCerts(), directory], cleanup: cleanup)
        let script = """
            set -euo pipefail
            cd "$1"
            for n in $(seq 1 "$2"); do
              name="wallet-$n"
              openssl ecparam -name prime256v1 -genkey -noout -out "$name.key" 2>/dev/null
              openssl req -new -key "$name.key" -subj "/O=Tokenet/CN=$name" -out "$name.csr"
              printf '%s\\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
                "extendedKeyUsage=clientAuth" "subjectAltName=URI:tokenet://wallet/$name" > "$name.ext"
              openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -sha256 \
                -extfile "$name.ext" -out "$name.pem" 2>/dev/null
            done
            """
        try run("/bin/bash", ["-c", script, "make-wallets", directory, "\(wallets)"], cleanup: cleanup)
    }

    private static func run(_ path: String, _ arguments: [String], cleanup: InterruptCleanup) throws {
        let process = try SpawnedProcess(path, arguments, standardOutput: .nullDevice)
        let tracked = cleanup.track(process)
        defer { cleanup.untrack(tracked) }
        let termination = process.waitUntilExit()
        guard termination.reason == .exit, termination.status == 0 else {
            throw BrokerBenchError("\(path) \(arguments.joined(separator: " ")) failed (\(termination.status))")
        }
    }

    /// Tools/gen-certs of the checkout this binary was built in.
    private static func genCerts() throws -> String {
        var starts = [FileManager.default.currentDirectoryPath]
        if let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            starts.append((me as NSString).deletingLastPathComponent)
        }
        for start in starts {
            var directory = URL(fileURLWithPath: start)
            while directory.path != "/" {
                let candidate = directory.appendingPathComponent("Tools/gen-certs").path
                if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
                directory.deleteLastPathComponent()
            }
        }
        throw BrokerBenchError("Tools/gen-certs not found above the working directory or the executable")
    }
}
