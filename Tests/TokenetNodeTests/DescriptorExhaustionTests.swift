import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// A node that runs out of file descriptors: connections that open TCP and never start TLS take them all.
@Suite struct DescriptorExhaustionTests {
    /// The node stops accepting short of its file-descriptor limit, logs that it cannot accept, why, and what to
    /// do, and serves again once the connections that held its descriptors close. The descriptors it keeps are
    /// free while peers hold every connection it accepts: a node that accepted until `accept4` failed with EMFILE
    /// had none left for its own work, and libdispatch, which opens `/proc/TID/stat` once a second while its
    /// queues are busy, killed it (a loaded machine's full test run saw the node gone).
    @Test(.timeLimit(.minutes(3))) func aNodeOutOfDescriptorsSaysSoAndServesOnceTheyClose() async throws {
        let scratch = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        // Limits given that fit no budget of 64 descriptors (the defaults would be lowered to fit): the node keeps
        // them and warns.
        let tsp = try await DescriptorLimitedTSP.start(
            in: scratch, ["--peer-connections", "64", "--address-handshakes", "64"])
        defer { tsp.stop() }
        let (node, address) = (tsp.node, tsp.address)

        let loop = try EventLoop(name: "test-descriptor-exhaustion")
        defer { loop.shutdown() }
        // Twenty at a time, until the node says it cannot accept: the node closes a connection whose handshake has
        // not begun after 10 s, so the connections must come faster than that. Opened one after the other on a
        // loaded machine (a full test run), 100 of them took about 35 s, and the node never ran out.
        var idle: [PlainConnection] = []
        let stderr = node.directory.path("stderr")
        var log = ""
        for _ in 0..<25 where !log.contains("accept failed") {
            idle += await withTaskGroup(of: PlainConnection?.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try? await PlainConnection.connect(host: address.host, port: address.port, on: loop)
                    }
                }
                return await group.reduce(into: []) { opened, connection in
                    if let connection { opened.append(connection) }
                }
            }
            log = (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? ""
        }
        for _ in 0..<1500 where !log.contains("accept failed") {
            try await Task.sleep(for: .milliseconds(20))
            log = (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? ""
        }
        let line = try #require(log.split(separator: "\n").first { $0.contains("accept failed") }, "\(log)")
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(node.process.pid)/fd").count
        // The sockets stop at 32 of the 64; the node's own files (the database's two connections and their
        // journals, logs, the event loops' descriptors) take about 18 of the rest, and a dozen stay free.
        #expect(open <= 64 - 12, "the node holds \(open) of its 64 descriptors")
        #expect(line.contains(" warning "), "\(line)")
        #expect(
            log.contains(
                "the file-descriptor limit is 64 (ulimit -n): with --peer-connections 64 and --address-handshakes 64, "
                    + "one peer can take every descriptor"), "\(log)")
        #expect(
            line.contains("sockets are open, the most the file-descriptor limit of 64 (ulimit -n) allows"), "\(line)")
        #expect(line.contains("raise the limit (ulimit -n)"), "\(line)")

        for connection in idle { await connection.abort() }
        let context = try TLSContext(
            configuration: .client(
                certificateChainFile: pki.path("operator.pem"), privateKeyFile: pki.path("operator.key"),
                trustedCAFile: pki.path("ca.pem")))
        let stream: TLSConnection
        do {
            stream = try await TLSConnection.connect(host: address.host, port: address.port, context: context, on: loop)
        } catch {
            let stderr = (try? String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8)) ?? ""
            Issue.record("\(error); the node is \(node.process.isRunning ? "running" : "gone"); its stderr:\n\(stderr)")
            return
        }
        let client = RPCClient(stream: stream)
        let health = try await client.unary(
            HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(30)))
        #expect(health.status == .serving)
        await client.close()
        node.process.send(SIGTERM)
        #expect(try await node.waitForExit().status == 0)
    }

    /// With the defaults, a node under a limit of 64 lowers them to fit and says so: a peer whose TLS connections
    /// never send a hello no longer takes every descriptor (before, 61 of them left others unserved for 40 s), and
    /// another peer is served while they are held.
    @Test(.timeLimit(.minutes(3))) func defaultLimitsAreFittedToALowDescriptorLimit() async throws {
        let scratch = try TemporaryDirectory()
        let tsp = try await DescriptorLimitedTSP.start(in: scratch)
        defer { tsp.stop() }
        let (node, address) = (tsp.node, tsp.address)
        let log = (try? String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8)) ?? ""
        #expect(
            log.contains(
                "the file-descriptor limit is 64 (ulimit -n): too low for the default connection limits: a peer may "
                    + "hold 8 connections (not 64), and an address may have 8 handshakes in progress (not 64)"),
            "\(log)")
        let loop = try EventLoop(name: "test-descriptor-budget")
        defer { loop.shutdown() }
        let context = DescriptorLimitedTSP.clientContext
        let hog = try context("wallet")
        var held: [TLSConnection] = []
        for _ in 0..<60 {
            if let connection = try? await TLSConnection.connect(
                host: address.host, port: address.port, context: hog, on: loop)
            {
                held.append(connection)
            }
        }
        let client = RPCClient(
            stream: try await TLSConnection.connect(
                host: address.host, port: address.port, context: try context("operator"), on: loop))
        let health = try await client.unary(
            HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(30)))
        #expect(health.status == .serving)
        await client.close()
        for connection in held { await connection.abort() }
    }
}
