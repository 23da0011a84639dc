import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A peer that stops reading slows down its own call; nobody buffers without bound.
@Suite struct BackpressureTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    @Test func serverStreamWaitsForAClientThatDoesNotRead() async throws {
        let sent = Atomic<Int>(0)
        let payload = Data(repeating: 7, count: 16 * 1024)
        var router = RPCRouter()
        router.serverStreaming(Echo.serverStream) { request, writer, _ in
            for index in 0..<Int(request.fUint32) {
                try await writer.send(Scalars(fInt32: Int32(index), fBytes: payload))
                sent.add(1, ordering: .relaxed)
            }
        }
        let (_, client, _) = InMemoryCallTests.connect(router)
        let responses = try await client.serverStreaming(Echo.serverStream, Scalars(fUint32: 300))
        // Wait until the sender stops making progress (it is blocked), however slow the machine is.
        var sentWhileNotReading = -1
        for _ in 0..<100 {
            try await Task.sleep(for: .milliseconds(50))
            let now = sent.load(ordering: .relaxed)
            if now == sentWhileNotReading, now > 0 { break }
            sentWhileNotReading = now
        }
        // The stream window is 1 MiB: 64 messages of 16 KiB, plus the one waiting for window.
        #expect(sentWhileNotReading <= 66, "the server kept sending to a client that does not read")
        #expect(sentWhileNotReading >= 60)
        var received: [Int32] = []
        for try await response in responses {
            #expect(response.fBytes == payload)
            received.append(response.fInt32)
        }
        #expect(received == (0..<300).map(Int32.init))
    }

    @Test func clientStreamWaitsForAServerThatDoesNotRead() async throws {
        let release = Atomic<Bool>(false)
        var router = RPCRouter()
        router.clientStreaming(Echo.clientStream) { requests, _ in
            while !release.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
            var count: Int32 = 0
            for try await _ in requests { count += 1 }
            return Scalars(fInt32: count)
        }
        let (_, client, _) = InMemoryCallTests.connect(router)
        let written = Atomic<Int>(0)
        let payload = Data(repeating: 1, count: 32 * 1024)
        let call = Task {
            try await client.clientStreaming(Echo.clientStream) { writer in
                for _ in 0..<200 {
                    try await writer.send(Scalars(fBytes: payload))
                    written.add(1, ordering: .relaxed)
                }
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        let writtenWhileNotReading = written.load(ordering: .relaxed)
        #expect(writtenWhileNotReading <= 33, "the client kept sending to a server that does not read")
        release.store(true, ordering: .releasing)
        #expect(try await call.value.fInt32 == 200)
    }
}
