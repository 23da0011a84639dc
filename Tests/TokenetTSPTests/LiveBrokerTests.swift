import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// The broker in the built `tsp-node` over mutual TLS: messages queued in a TSP killed with SIGKILL are delivered
/// after it restarts, in order, those already sent counted as redeliveries.
@Suite(.serialized) struct LiveBrokerTests {
    typealias Node = LiveNodeTests.Node

    static func notifications(_ role: String, port: UInt16, loop: EventLoop) async throws
        -> TspV1.Notifications.Client
    {
        TspV1.Notifications.Client(try await LiveNodeTests.client(role, port: port, loop: loop))
    }

    @Test func queuedMessagesSurviveSigkill() async throws {
        let loop = try EventLoop(name: "broker-live-test")
        defer { loop.shutdown() }
        let dataDirectory = try TSPHarness.temporaryDirectory()
        // No issuer is needed here; the address only has to be well formed.
        let first = try await Node(dataDirectory: dataDirectory, issuerPort: 9)
        defer { first.kill() }

        let operatorClient = try await Self.notifications("operator", port: first.port, loop: loop)
        var ids: [String] = []
        for index in 0..<20 {
            let notification = BrokerHarness.notification(card: "card-\(index % 4)", note: "\(index)")
            let response = try await operatorClient.publish(
                TspV1.PublishRequest(notification: notification, subscribers: ["wallet/wallet-1"]))
            ids.append(response.messageID)
        }
        let wallet = try await Self.notifications("wallet", port: first.port, loop: loop)
        var stream = try await wallet.subscribe(TspV1.SubscribeRequest(maxInFlight: 5)).makeAsyncIterator()
        let firstFive = try await stream.take(5)
        #expect(firstFive.map(\.messageID) == Array(ids.prefix(5)))
        let ack = try await wallet.acknowledge(TspV1.AcknowledgeRequest(messageIds: Array(ids.prefix(2))))
        #expect(ack.acknowledged == 2)

        first.kill()
        #expect(first.process.termination?.reason == .uncaughtSignal)

        let second = try await Node(dataDirectory: dataDirectory, issuerPort: 9)
        defer { second.kill() }
        let restarted = try await Self.notifications("wallet", port: second.port, loop: loop)
        let status = try await restarted.queueStatus(TspV1.QueueStatusRequest())
        #expect(status.pending == 18)
        #expect(status.acknowledgedTotal == 2)
        #expect(status.lastSequence == 20)
        var after = try await restarted.subscribe(TspV1.SubscribeRequest(maxInFlight: 100)).makeAsyncIterator()
        let rest = try await after.take(18)
        #expect(rest.map(\.messageID) == Array(ids.dropFirst(2)))
        #expect(rest.map(\.sequence) == Array(3...20))
        // 3 to 7 were sent before the kill (6 and 7 when the acknowledgement opened the window); that progress
        // went to disk with the acknowledgement's commit.
        #expect(rest.prefix(5).map(\.deliveryAttempt) == [2, 2, 2, 2, 2])
        #expect(rest.dropFirst(5).allSatisfy { $0.deliveryAttempt == 1 })
        for card in 0..<4 {
            let sequences = rest.filter { $0.cardID == "card-\(card)" }.map(\.sequence)
            #expect(sequences == sequences.sorted())
        }
        let done = try await restarted.acknowledge(TspV1.AcknowledgeRequest(messageIds: rest.map(\.messageID)))
        #expect(done.acknowledged == 18)
        #expect(try await restarted.queueStatus(TspV1.QueueStatusRequest()).pending == 0)
    }

    /// A running `wallet-node` subscribed to the TSP at `tspPort`, logging to `<data dir>/wallet-node.log`.
    final class WalletNodeProcess {
        let process: SpawnedProcess

        init(dataDirectory: String, tspPort: UInt16) async throws {
            let pem = LiveNodeTests.pem
            let ready = dataDirectory + "/ready-\(UUID().uuidString)"
            let log = dataDirectory + "/wallet-node.log"
            if !FileManager.default.fileExists(atPath: log) {
                _ = FileManager.default.createFile(atPath: log, contents: nil)
            }
            // A restarted node adds to the log of the one before.
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            defer { try? handle.close() }
            handle.seekToEndOfFile()
            process = try SpawnedProcess(
                try LiveNodeTests.Node.executable().deletingLastPathComponent().appendingPathComponent("wallet-node")
                    .path,
                [
                    "--listen", "127.0.0.1:0", "--cert", pem("wallet.pem"), "--key", pem("wallet.key"), "--ca",
                    pem("ca.pem"), "--tsp", "127.0.0.1:\(tspPort)", "--data-dir", dataDirectory + "/data",
                    "--ready-file", ready,
                ],
                standardInput: .nullDevice, standardOutput: .nullDevice,
                standardError: .descriptor(handle.fileDescriptor))
            let deadline = Date().addingTimeInterval(60)
            while !FileManager.default.fileExists(atPath: ready), process.isRunning, Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            guard FileManager.default.fileExists(atPath: ready) else {
                kill()
                throw LiveNodeTests.NodeDidNotStart(log: (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
            }
        }

        func kill() {
            process.send(SIGKILL)
            process.waitUntilExit()
        }

        deinit { kill() }
    }

    /// The sequences of the messages the wallet node logged as handled, in log order.
    static func handledSequences(_ directory: String) throws -> [Int] {
        let log = try String(contentsOfFile: directory + "/wallet-node.log", encoding: .utf8)
        return log.split(separator: "\n").filter { $0.contains("notification received") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("sequence=") }.flatMap { Int($0.dropFirst(9)) }
        }
    }

    /// Waits (bounded) until the operator sees `count` acknowledgements in wallet-1's queue.
    static func waitForAcknowledged(_ count: UInt64, port: UInt16, loop: EventLoop) async throws {
        let operatorClient = try await notifications("operator", port: port, loop: loop)
        for _ in 0..<3000 {
            let status = try await operatorClient.queueStatus(TspV1.QueueStatusRequest(subscriber: "wallet/wallet-1"))
            if status.acknowledgedTotal >= count { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("wallet-1 did not acknowledge \(count) messages")
    }

    static func publish(_ count: Int, from start: Int, port: UInt16, loop: EventLoop) async throws {
        let operatorClient = try await notifications("operator", port: port, loop: loop)
        for index in start..<(start + count) {
            _ = try await operatorClient.publish(
                TspV1.PublishRequest(
                    notification: BrokerHarness.notification(card: "card-\(index % 3)", note: "\(index)"),
                    subscribers: ["wallet/wallet-1"]))
        }
    }

    /// The real wallet node handles every message once and in order while the TSP is killed and restarted, and
    /// while the wallet node itself is killed and restarted.
    @Test func walletNodeHandlesEachMessageOnceAcrossRestartsOfBothSides() async throws {
        let loop = try EventLoop(name: "broker-live-wallet")
        defer { loop.shutdown() }
        let directory = try TSPHarness.temporaryDirectory()
        let tspData = directory + "/tsp"
        try FileManager.default.createDirectory(atPath: tspData, withIntermediateDirectories: true)
        var tsp = try await Node(dataDirectory: tspData, issuerPort: 9)
        let port = tsp.port
        var wallet = try await WalletNodeProcess(dataDirectory: directory, tspPort: port)

        try await Self.publish(10, from: 0, port: port, loop: loop)
        try await Self.waitForAcknowledged(10, port: port, loop: loop)

        // The TSP dies with the wallet connected; the wallet reconnects to the restarted TSP by itself.
        tsp.kill()
        tsp = try await Node(dataDirectory: tspData, issuerPort: 9, listenPort: port)
        try await Self.publish(10, from: 10, port: port, loop: loop)
        try await Self.waitForAcknowledged(20, port: port, loop: loop)

        // The wallet dies; what is published meanwhile waits in its queue.
        wallet.kill()
        try await Self.publish(5, from: 20, port: port, loop: loop)
        wallet = try await WalletNodeProcess(dataDirectory: directory, tspPort: port)
        try await Self.waitForAcknowledged(25, port: port, loop: loop)
        wallet.kill()
        tsp.kill()

        #expect(try Self.handledSequences(directory) == Array(1...25))
    }
}
