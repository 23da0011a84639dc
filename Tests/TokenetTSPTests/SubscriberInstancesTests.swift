import Testing
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// A second node on the same certificate took the first one's notification stream (and acknowledged messages about
/// cards it did not know) every time it reconnected; the TSP only warned. A node now subscribes with its instance
/// id: the same instance replaces its stream, another one is refused while the stream is open.
@Suite struct SubscriberInstancesTests {
    @Test func theSameInstanceReplacesAnotherIsRefusedWhileTheStreamIsOpen() {
        var table = SubscriberInstances()
        var decisions: [SubscriberInstances.Decision] = []
        func subscribe(_ instance: String, stream: UInt64, at now: UInt64) {
            let decision = table.decide(subscriber: "wallet/wallet-1", instanceID: instance)
            decisions.append(decision)
            if case .open = decision {
                table.opened(subscriber: "wallet/wallet-1", streamID: stream, instanceID: instance, atMs: now)
            }
        }
        subscribe("a", stream: 1, at: 10)
        subscribe("a", stream: 2, at: 20)
        subscribe("b", stream: 3, at: 30)
        // The replaced stream ends after its replacement opened: the newer one still holds the queue.
        table.closed(subscriber: "wallet/wallet-1", streamID: 1)
        subscribe("b", stream: 4, at: 40)
        subscribe("", stream: 5, at: 50)
        table.closed(subscriber: "wallet/wallet-1", streamID: 5)
        subscribe("b", stream: 6, at: 60)
        #expect(
            decisions == [
                .open(replacing: false, sameInstance: false), .open(replacing: true, sameInstance: true),
                .refuse(held: .init(streamID: 2, instanceID: "a", sinceMs: 20)),
                .refuse(held: .init(streamID: 2, instanceID: "a", sinceMs: 20)),
                .open(replacing: true, sameInstance: false), .open(replacing: false, sameInstance: false),
            ])
        #expect(
            table.decide(subscriber: "wallet/wallet-2", instanceID: "a") == .open(replacing: false, sameInstance: false)
        )
    }

    /// Over an in-memory connection; that the stream opens to another instance once the first is gone is the pure
    /// test's above (waiting here for a cancelled stream to close once hung under a full parallel run).
    @Test(.timeLimit(.minutes(3))) func aSecondNodeOnTheSameCertificateIsRefusedWhileTheFirstHoldsTheStream()
        async throws
    {
        let harness = try BrokerHarness.make()
        let first = Task {
            var stream = try await harness.client().subscribe(TspV1.SubscribeRequest(instanceID: "node-a"))
                .makeAsyncIterator()
            _ = try await stream.next()
        }
        defer { first.cancel() }
        try #require(
            await NotificationSubscriberTests.eventually { harness.broker.figures(of: "wallet/wallet-1").connected })
        var second = try await harness.client().subscribe(TspV1.SubscribeRequest(instanceID: "node-b"))
            .makeAsyncIterator()
        do {
            _ = try await second.next()
            Issue.record("a second instance took the stream")
        } catch let error as RPCError {
            #expect(error.code == .alreadyExists)
            #expect(error.message.contains("wallet/wallet-1 is subscribed already from another node (instance node-a"))
            #expect(error.message.contains("give each node its own identity"), "\(error.message)")
        }
        var bad = try await harness.client().subscribe(TspV1.SubscribeRequest(instanceID: "no spaces"))
            .makeAsyncIterator()
        await #expect(throws: RPCError.self) { _ = try await bad.next() }
        // The first node's stream is still open and its own.
        #expect(harness.broker.figures(of: "wallet/wallet-1").connected)
    }
}
