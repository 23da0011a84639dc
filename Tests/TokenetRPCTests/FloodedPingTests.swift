import Foundation
import Testing
import TokenetWire

@testable import TokenetRPC
@testable import TokenetTransport

/// A peer that floods frames that do no work (pings, empty frames) while it reads what it is sent: each is cheap,
/// but a few connections of them kept a node's loop busy and every other client waiting for seconds.
@Suite(.timeLimit(.minutes(3))) struct FloodedPingTests {
    typealias Harness = UnreadingPeerTests.Harness

    /// The allowance: `burst` at once, then a tenth of it a second, refilled by the time that passed.
    @Test func theAllowanceRefillsWithTime() {
        var allowance = WorkFreeFrameAllowance(burst: 10)
        let start = ContinuousClock.now
        var taken: [Bool] = []
        for _ in 0..<11 { taken.append(allowance.take(at: start)) }
        #expect(taken == Array(repeating: true, count: 10) + [false])
        // A second later: one more a second for a burst of 10.
        taken = [allowance.take(at: start + .seconds(1)), allowance.take(at: start + .seconds(1))]
        #expect(taken == [true, false])
        // Never more than the burst, however long the peer was quiet.
        let later = start + .seconds(3_600)
        taken = []
        for _ in 0..<11 { taken.append(allowance.take(at: later)) }
        #expect(taken == Array(repeating: true, count: 10) + [false])
        #expect(allowance.description == "10 at once and 1 a second after that")
    }

    @Test func onlyFramesThatDoNoWorkCount() {
        #expect(WorkFreeFrameAllowance.isWorkFree(WireV1.Frame(streamID: 0, kind: nil)))
        #expect(WorkFreeFrameAllowance.isWorkFree(WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 1)))))
        #expect(WorkFreeFrameAllowance.isWorkFree(WireV1.Frame(streamID: 0, kind: .pong(WireV1.Pong(payload: 1)))))
        #expect(
            WorkFreeFrameAllowance.isWorkFree(
                WireV1.Frame(streamID: 0, kind: .windowUpdate(WireV1.WindowUpdate(increment: 1)))))
        // A window update on a call's stream grants room to a large message: a bulk stream sends many.
        #expect(
            !WorkFreeFrameAllowance.isWorkFree(
                WireV1.Frame(streamID: 1, kind: .windowUpdate(WireV1.WindowUpdate(increment: 1)))))
        #expect(
            !WorkFreeFrameAllowance.isWorkFree(
                WireV1.Frame(streamID: 1, kind: .halfClose(WireV1.HalfClose()))))
    }

    /// Past the allowance the connection ends with a goaway whose reason names the limit, and another
    /// connection's calls are answered; a peer within it keeps its connection.
    @Test(arguments: [false, true]) func aFloodOfPingsOrEmptyFramesEndsItsConnection(empty: Bool) async throws {
        let harness = try await Harness(name: "rpc-flooded-\(empty ? "empty" : "ping")")
        let encoder = FrameEncoder()
        func frames(_ count: Int, from first: Int = 1) throws -> [UInt8] {
            var bytes: [UInt8] = []
            for index in first..<(first + count) {
                let frame =
                    empty
                    ? WireV1.Frame(streamID: 0, kind: nil)
                    : WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: UInt64(index))))
                try encoder.encode(frame, into: &bytes)
            }
            return bytes
        }

        // Within the allowance: the connection stays, and a call on it is answered.
        let calm = try await harness.connect()
        try await calm.write(try UnreadingPeerTests.hello() + (try frames(500)))
        let calmClient = RPCClient(stream: try await harness.connect())
        #expect(try await calmClient.unary(TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 1)).fInt32 == 2)

        let flooder = try await harness.connect()
        let reader = Task {
            // Reads what the server sends (pongs, then the goaway), as a flooder that reads does.
            var decoder = FrameDecoder()
            var goaway: WireV1.GoAway?
            while goaway == nil, let chunk = try await flooder.read() {
                decoder.feed(chunk)
                while let frame = try decoder.nextFrame() {
                    if case .goaway(let received)? = frame.kind { goaway = received }
                }
            }
            return goaway
        }
        try await flooder.write(try UnreadingPeerTests.hello() + (try frames(1_500)))
        let goaway = try await reader.value
        #expect(goaway?.code == .protocolError, "\(String(describing: goaway))")
        #expect(
            goaway?.reason
                == "the peer sent more frames that do no work (pings, pongs, empty frames) than this side allows: "
                + "1000 at once and 100 a second after that", "\(String(describing: goaway))")
        let problem = try await harness.firstProblem()
        #expect(problem == goaway?.reason, "\(String(describing: problem))")

        // Another connection carries on.
        #expect(try await calmClient.unary(TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 2)).fInt32 == 3)
        await calmClient.close()
        await calm.close()
        await flooder.close()
        await harness.stop()
    }
}
