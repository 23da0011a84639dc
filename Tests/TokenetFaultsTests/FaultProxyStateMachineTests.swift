import Testing

@testable import TokenetFaults

/// The proxy's decisions as event → action lists.
@Suite struct FaultProxyStateMachineTests {
    typealias Machine = FaultProxyStateMachine
    let start = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test func withoutAFaultBytesGoOnAtOnce() {
        var machine = Machine()
        let (id, action) = machine.accepted()
        #expect(action == .connectUpstream(id))
        #expect(
            machine.received(id, .toUpstream, [1, 2], at: at(0)) == [
                .forward(id, .toUpstream, [1, 2], notBefore: at(0))
            ])
        #expect(machine.received(id, .toClient, [3], at: at(5)) == [.forward(id, .toClient, [3], notBefore: at(5))])
        #expect(machine.ended(id) == [.finish(id)])
        #expect(machine.ended(id) == [])
        #expect(machine.connectionCount == 0)
    }

    /// A side's end of stream ends its direction only, after what was forwarded before it: the answer still
    /// flows the other way, and the connection finishes once both directions have ended.
    @Test func anEndOfStreamEndsOneDirectionAndTheOtherFlowsOn() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        #expect(
            machine.received(id, .toUpstream, [1], at: at(0)) == [.forward(id, .toUpstream, [1], notBefore: at(0))])
        #expect(machine.ended(id, .toUpstream) == [.shutdownWrite(id, .toUpstream)])
        #expect(machine.carries(id))
        #expect(machine.received(id, .toClient, [2], at: at(1)) == [.forward(id, .toClient, [2], notBefore: at(1))])
        #expect(machine.ended(id, .toClient) == [.shutdownWrite(id, .toClient), .finish(id)])
        #expect(!machine.carries(id))
        #expect(machine.ended(id, .toClient) == [])
        #expect(machine.connectionCount == 0)
    }

    /// An error after one direction ended still closes the whole connection.
    @Test func anErrorAfterAnEndOfStreamClosesTheWholeConnection() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        #expect(machine.ended(id, .toClient) == [.shutdownWrite(id, .toClient)])
        #expect(machine.ended(id) == [.finish(id)])
        #expect(!machine.carries(id))
    }

    /// A side that fails (a read or write error: the peer reset it) cuts the connection with a reset to both sides,
    /// dropping what a partition holds, as a TCP reset does; a connection already gone answers nothing.
    @Test func aFailedSideResetsTheWholeConnection() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        _ = machine.set(.partition, at: at(0))
        #expect(machine.received(id, .toClient, [1], at: at(1)) == [])
        #expect(machine.failed(id) == [.close(id)])
        #expect(!machine.carries(id))
        #expect(machine.failed(id) == [])
        #expect(machine.set(.none, at: at(2)) == [])
    }

    /// Under a delay the machine passes the end on at once (the proxy queues it behind the chunks its writer holds,
    /// which `FaultProxyTests` checks); healing still brings those chunks forward, and the other direction flows.
    @Test func anEndOfStreamUnderADelayIsPassedOnAndHealingStillHurriesTheChunks() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        _ = machine.set(.delay(.seconds(600)), at: at(0))
        #expect(
            machine.received(id, .toClient, [7], at: at(1)) == [
                .forward(id, .toClient, [7], notBefore: at(1) + .seconds(600))
            ])
        #expect(machine.ended(id, .toClient) == [.shutdownWrite(id, .toClient)])
        #expect(machine.set(.none, at: at(2)) == [.hurry(id, .toClient, notAfter: at(2))])
        #expect(machine.received(id, .toUpstream, [8], at: at(3)) == [.forward(id, .toUpstream, [8], notBefore: at(3))])
    }

    /// Under a partition the end waits behind what it holds in its direction, while the other direction flows; the
    /// lift sends the held bytes, then the end, and the connection finishes if the other direction ended too.
    @Test func anEndOfStreamUnderAPartitionWaitsBehindWhatItHoldsInItsDirection() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        _ = machine.set(.partition, only: .toUpstream, at: at(0))
        #expect(machine.received(id, .toUpstream, [1], at: at(1)) == [])
        #expect(machine.ended(id, .toUpstream) == [])
        #expect(machine.received(id, .toClient, [2], at: at(2)) == [.forward(id, .toClient, [2], notBefore: at(2))])
        #expect(machine.ended(id, .toClient) == [.shutdownWrite(id, .toClient)])
        #expect(machine.carries(id))
        #expect(
            machine.set(.delay(.milliseconds(10)), only: .toUpstream, at: at(10)) == [
                .forward(id, .toUpstream, [1], notBefore: at(20)), .shutdownWrite(id, .toUpstream), .finish(id),
            ])
        #expect(!machine.carries(id))
        // The end waits behind the delayed bytes, which healing still brings forward.
        #expect(machine.set(.none, at: at(11)) == [.hurry(id, .toUpstream, notAfter: at(11))])
    }

    /// With nothing held in its direction, an end goes on at once under a partition too.
    @Test func anEndOfStreamUnderAPartitionWithNothingHeldGoesOnAtOnce() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        _ = machine.set(.partition, at: at(0))
        #expect(machine.received(id, .toClient, [2], at: at(1)) == [])
        #expect(machine.ended(id, .toUpstream) == [.shutdownWrite(id, .toUpstream)])
        #expect(machine.set(.none, at: at(2)) == [.forward(id, .toClient, [2], notBefore: at(2))])
        #expect(machine.carries(id))
    }

    @Test func aDelayHoldsEachChunkBackAndAShorterOneCannotReorder() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        _ = machine.set(.delay(.milliseconds(100)), at: at(0))
        #expect(
            machine.received(id, .toUpstream, [1], at: at(0)) == [.forward(id, .toUpstream, [1], notBefore: at(100))])
        // A longer delay leaves what is on its way alone.
        #expect(machine.set(.delay(.milliseconds(500)), at: at(10)) == [])
        #expect(machine.set(.delay(.milliseconds(100)), at: at(15)) == [])
        // The delay drops to 10 ms: what waits goes by then, and the next chunk not before it.
        #expect(
            machine.set(.delay(.milliseconds(10)), at: at(20)) == [.hurry(id, .toUpstream, notAfter: at(30))])
        #expect(
            machine.received(id, .toUpstream, [2], at: at(20)) == [
                .forward(id, .toUpstream, [2], notBefore: at(30))
            ])
        // The other direction has its own order.
        #expect(machine.received(id, .toClient, [3], at: at(20)) == [.forward(id, .toClient, [3], notBefore: at(30))])
        #expect(machine.set(.none, at: at(200)) == [])
        #expect(
            machine.received(id, .toUpstream, [4], at: at(200)) == [.forward(id, .toUpstream, [4], notBefore: at(200))])
    }

    /// A mistyped `delay 10m` is mended by `heal`: what it holds goes at once, in order, in the directions healed;
    /// a partition leaves what is already on its way alone.
    @Test func healingBringsForwardWhatADelayHoldsInTheDirectionsHealed() {
        var machine = Machine()
        let (first, _) = machine.accepted()
        let (second, _) = machine.accepted()
        _ = machine.set(.delay(.seconds(600)), at: at(0))
        _ = machine.received(first, .toUpstream, [1], at: at(1))
        _ = machine.received(first, .toClient, [2], at: at(2))
        _ = machine.received(second, .toUpstream, [3], at: at(3))
        #expect(machine.set(.partition, at: at(4)) == [])
        #expect(machine.received(first, .toUpstream, [4], at: at(5)) == [])
        #expect(
            machine.set(.none, only: .toClient, at: at(6)) == [.hurry(first, .toClient, notAfter: at(6))])
        #expect(
            machine.set(.none, at: at(7)) == [
                .hurry(first, .toUpstream, notAfter: at(7)), .hurry(second, .toUpstream, notAfter: at(7)),
                .forward(first, .toUpstream, [4], notBefore: at(7)),
            ])
        #expect(machine.set(.none, at: at(8)) == [])
    }

    /// A side that ends under a long delay leaves what the delay holds on its way, the close after it: healing
    /// brings that forward too, in the directions healed, rather than leaving it to the delay or to a reset. A
    /// connection whose writers are done (`drained`) has nothing left to bring forward.
    @Test func healingBringsForwardWhatADelayHoldsForAConnectionThatEnded() {
        var machine = Machine()
        let (first, _) = machine.accepted()
        let (second, _) = machine.accepted()
        _ = machine.set(.delay(.seconds(600)), at: at(0))
        _ = machine.received(first, .toUpstream, [1], at: at(1))
        _ = machine.received(first, .toClient, [2], at: at(2))
        _ = machine.received(second, .toClient, [3], at: at(3))
        #expect(machine.ended(first) == [.finish(first)])
        #expect(machine.ended(second) == [.finish(second)])
        #expect(machine.connectionCount == 0)
        #expect(
            machine.set(.none, only: .toClient, at: at(4)) == [
                .hurry(first, .toClient, notAfter: at(4)), .hurry(second, .toClient, notAfter: at(4)),
            ])
        machine.drained(first)
        #expect(machine.set(.none, at: at(5)) == [])
    }

    /// An end that waited behind what a partition held goes on when a delay lifts the partition, after the held
    /// bytes: healing then brings both forward.
    @Test func healingBringsForwardWhatALiftedPartitionHandedToADelayBeforeAnEnd() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        _ = machine.set(.partition, at: at(0))
        _ = machine.received(id, .toClient, [7], at: at(1))
        #expect(machine.ended(id) == [])
        #expect(
            machine.set(.delay(.seconds(600)), at: at(2)) == [
                .forward(id, .toClient, [7], notBefore: at(2) + .seconds(600)), .finish(id),
            ])
        #expect(machine.set(.none, at: at(3)) == [.hurry(id, .toClient, notAfter: at(3))])
        #expect(machine.set(.none, at: at(4)) == [])
    }

    @Test func aPartitionHoldsEverythingAndLiftingItSendsItOnInOrder() {
        var machine = Machine(holdLimit: 3)
        let (first, _) = machine.accepted()
        let (second, _) = machine.accepted()
        _ = machine.set(.partition, at: at(0))
        #expect(machine.received(first, .toUpstream, [1], at: at(1)) == [])
        #expect(machine.received(second, .toClient, [9], at: at(2)) == [])
        #expect(machine.received(first, .toUpstream, [2, 3], at: at(3)) == [])
        #expect(machine.received(first, .toClient, [4], at: at(4)) == [])
        // Three bytes held towards upstream: that sender is no longer read; the others are.
        #expect(!machine.mayRead(first, .toUpstream))
        #expect(machine.mayRead(first, .toClient))
        #expect(machine.set(.partition, at: at(5)) == [])
        #expect(
            machine.set(.delay(.milliseconds(10)), at: at(50)) == [
                .forward(first, .toUpstream, [1], notBefore: at(60)),
                .forward(first, .toUpstream, [2, 3], notBefore: at(60)),
                .forward(first, .toClient, [4], notBefore: at(60)),
                .forward(second, .toClient, [9], notBefore: at(60)),
            ])
        // What was held is on its way now, and counts until it is written.
        #expect(!machine.mayRead(first, .toUpstream))
        machine.written(first, .toUpstream, 1)
        #expect(machine.mayRead(first, .toUpstream))
    }

    /// A delay holds what is on its way, not all a sender can send meanwhile: past the limit the sender is not read
    /// until bytes are written, in that direction only.
    @Test func aDelayHoldsAtMostTheLimitOnItsWay() {
        var machine = Machine(holdLimit: 3)
        let (id, _) = machine.accepted()
        _ = machine.set(.delay(.seconds(600)), at: at(0))
        _ = machine.received(id, .toUpstream, [1, 2], at: at(1))
        #expect(machine.mayRead(id, .toUpstream))
        _ = machine.received(id, .toUpstream, [3], at: at(2))
        #expect(!machine.mayRead(id, .toUpstream))
        #expect(machine.mayRead(id, .toClient))
        machine.written(id, .toUpstream, 2)
        #expect(machine.mayRead(id, .toUpstream))
        // Bytes held by a partition and bytes on their way count together.
        _ = machine.set(.partition, at: at(3))
        _ = machine.received(id, .toUpstream, [4, 5], at: at(4))
        #expect(!machine.mayRead(id, .toUpstream))
        machine.written(id, .toUpstream, 1)
        #expect(machine.mayRead(id, .toUpstream))
        machine.written(id, .toUpstream, 5)  // more than it held: a connection never holds less than nothing
        #expect(machine.mayRead(id, .toUpstream))
    }

    @Test func aPartitionOfOneDirectionHoldsOnlyThatOne() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        // A lost response: requests reach the server, its answers are held.
        #expect(machine.set(.partition, only: .toClient, at: at(0)) == [])
        #expect(machine.summary == "to-server none, to-client partition")
        #expect(machine.received(id, .toUpstream, [1], at: at(1)) == [.forward(id, .toUpstream, [1], notBefore: at(1))])
        #expect(machine.received(id, .toClient, [2], at: at(2)) == [])
        // A delay towards the server leaves the held answer where it is.
        #expect(machine.set(.delay(.milliseconds(5)), only: .toUpstream, at: at(3)) == [])
        #expect(machine.received(id, .toUpstream, [3], at: at(3)) == [.forward(id, .toUpstream, [3], notBefore: at(8))])
        #expect(machine.set(.none, only: .toClient, at: at(10)) == [.forward(id, .toClient, [2], notBefore: at(10))])
        #expect(machine.summary == "to-server delay 5ms, to-client none")
        // Without a direction a fault is for both again.
        _ = machine.set(.none, at: at(11))
        #expect(machine.summary == "none")
    }

    @Test func refusingIsForNewConnectionsAndAnyWholeFaultEndsIt() {
        var machine = Machine()
        _ = machine.set(.partition, only: .toUpstream, at: at(0))
        _ = machine.set(.refuse, at: at(1))
        #expect(machine.refusing)
        #expect(machine.summary == "refuse")
        #expect(machine.fault(.toUpstream) == .none)
        _ = machine.set(.partition, at: at(2))
        #expect(!machine.refusing)
        #expect(machine.summary == "partition")
    }

    @Test func anEndUnderAPartitionWaitsBehindWhatItHolds() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        _ = machine.set(.partition, at: at(0))
        _ = machine.received(id, .toClient, [7], at: at(1))
        #expect(machine.ended(id) == [])
        #expect(machine.carries(id))
        #expect(machine.set(.none, at: at(10)) == [.forward(id, .toClient, [7], notBefore: at(10)), .finish(id)])
        #expect(!machine.carries(id))
    }

    @Test func anEndUnderAPartitionWithNothingHeldFinishesAtOnce() {
        var machine = Machine()
        let (id, _) = machine.accepted()
        _ = machine.set(.partition, at: at(0))
        #expect(machine.ended(id) == [.finish(id)])
    }

    @Test func refusingClosesNewConnectionsOnlyAndResetClosesEveryOne() {
        var machine = Machine()
        let (first, _) = machine.accepted()
        _ = machine.set(.refuse, at: at(0))
        let (refused, action) = machine.accepted()
        #expect(action == .close(refused))
        #expect(!machine.carries(refused))
        #expect(
            machine.received(first, .toUpstream, [1], at: at(1)) == [
                .forward(first, .toUpstream, [1], notBefore: at(1))
            ])
        _ = machine.set(.none, at: at(2))
        let (third, _) = machine.accepted()
        #expect(machine.reset() == [.close(first), .close(third)])
        #expect(machine.connectionCount == 0)
        #expect(machine.received(first, .toUpstream, [1], at: at(3)) == [])
        #expect(machine.summary == "none")
        #expect(!machine.refusing)
    }
}
