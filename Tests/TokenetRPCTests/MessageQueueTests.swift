import Foundation
import Testing

@testable import TokenetRPC

/// The queue keeps a lone message in a slot of its own and the rest in an array; order must not depend on which.
@Suite struct MessageQueueTests {
    static func data(_ byte: UInt8) -> Data { Data([byte]) }

    @Test func messagesComeOutInOrderWhateverTheInterleaving() async throws {
        let queue = MessageQueue()
        queue.yield(Self.data(1))
        #expect(try await queue.next() == Self.data(1))
        queue.yield(Self.data(2))
        queue.yield(Self.data(3))
        #expect(try await queue.next() == Self.data(2))
        queue.yield(Self.data(4))
        #expect(try await queue.next() == Self.data(3))
        #expect(try await queue.next() == Self.data(4))
        queue.yield(Self.data(5))
        queue.finish()
        #expect(try await queue.next() == Self.data(5))
        #expect(try await queue.next() == nil)
        #expect(try await queue.next() == nil)
    }

    @Test func manyMessagesKeepTheirOrder() async throws {
        let queue = MessageQueue()
        for byte in 0..<200 { queue.yield(Self.data(UInt8(byte))) }
        var received: [UInt8] = []
        for _ in 0..<150 { received += try #require(try await queue.next()) }
        for byte in 200..<256 { queue.yield(Self.data(UInt8(byte))) }
        queue.finish(throwing: RPCError(.aborted, "done"))
        while true {
            do {
                guard let data = try await queue.next() else { break }
                received += data
            } catch let error as RPCError {
                #expect(error.code == .aborted)
                break
            }
        }
        #expect(received == Array(0...255))
    }
}
