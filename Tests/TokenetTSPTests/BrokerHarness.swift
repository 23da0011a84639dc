import Foundation
import Synchronization
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// A notification broker over a TSP database in a directory of its own, served over in-memory connections.
struct BrokerHarness {
    let directory: String
    let database: Database
    let broker: NotificationBroker
    let router: RPCRouter
    let clock: ManualMilliseconds

    static func make(
        directory: String? = nil, retention: NotificationRetention = NotificationRetention(),
        clock: ManualMilliseconds = ManualMilliseconds()
    ) throws -> BrokerHarness {
        let directory = try directory ?? TSPHarness.temporaryDirectory()
        let database = try Database.open(path: directory + "/tsp.sqlite")
        try Migrator(TSPStore.migrations).migrate(database)
        let broker = try NotificationBroker.open(
            database: database, retention: retention, logger: Logger(node: "tsp-node", sink: MemoryLogSink()),
            nowMs: { clock.now })
        var router = RPCRouter()
        NotificationsService(broker: broker, logger: Logger(node: "tsp-node", sink: MemoryLogSink()))
            .register(on: &router)
        return BrokerHarness(directory: directory, database: database, broker: broker, router: router, clock: clock)
    }

    /// The same directory opened again, as after a restart of the TSP.
    func reopened(retention: NotificationRetention = NotificationRetention()) throws -> BrokerHarness {
        broker.shutDown()
        try database.close()
        return try Self.make(directory: directory, retention: retention, clock: clock)
    }

    func client(_ role: PeerRole = .wallet, _ nodeID: String = "wallet-1") -> TspV1.Notifications.Client {
        TspV1.Notifications.Client(TSPHarness.connect(router, as: PeerIdentity(role: role, nodeID: nodeID)))
    }

    static func notification(card: String, type: String = "CARD_STATE", note: String = "")
        -> TspV1.Notification
    {
        var notification = TspV1.Notification()
        notification.sender = "CPS"
        notification.topic = "D1_NOTIFICATION"
        notification.messageType = type
        notification.cardID = card
        notification.body = .messaging(TspV1.MessagingBody(title: note, body: "", action: ""))
        return notification
    }

    /// Publishes `count` messages to `subscribers`, cycling over `cards`; returns their ids in order.
    @discardableResult
    func publish(_ count: Int, to subscribers: [String] = ["wallet/wallet-1"], cards: [String] = ["card-1"])
        async throws -> [String]
    {
        var ids: [String] = []
        for index in 0..<count {
            let card = cards[index % cards.count]
            ids.append(
                try await broker.publish(Self.notification(card: card, note: "\(index)"), to: subscribers))
        }
        return ids
    }
}

/// Milliseconds since the epoch that tests move by hand.
final class ManualMilliseconds: Sendable {
    private let value = Mutex<UInt64>(1_795_000_000_000)
    var now: UInt64 { value.withLock { $0 } }
    func advance(seconds: UInt64) { value.withLock { $0 += seconds * 1000 } }
}

extension ResponseStream.AsyncIterator {
    /// The next `count` messages; fails if the stream ends first.
    mutating func take(_ count: Int) async throws -> [Response] {
        var result: [Response] = []
        while result.count < count {
            guard let next = try await next() else { throw StreamEnded(received: result.count) }
            result.append(next)
        }
        return result
    }
}

struct StreamEnded: Error {
    var received: Int
}
