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
        let first = try Node(dataDirectory: dataDirectory, issuerPort: 9)
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
        #expect(first.process.terminationReason == .uncaughtSignal)

        let second = try Node(dataDirectory: dataDirectory, issuerPort: 9)
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
}
