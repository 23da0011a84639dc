import CTokenetShims
import Glibc
import Testing

@testable import TokenetTransport

@Suite struct PeerPlacementTests {
    @Test func sameCPUNeedsBothCPUsKnownAndEqual() {
        #expect(PeerPlacement.sameCPU(incoming: 3, current: 3))
        #expect(!PeerPlacement.sameCPU(incoming: 2, current: 3))
        #expect(!PeerPlacement.sameCPU(incoming: -1, current: -1))
        #expect(!PeerPlacement.sameCPU(incoming: -1, current: 0))
    }

    @Test func aSocketWithoutAPeerNeverSharesACPU() {
        let fd = ctk_tcp_socket()
        defer { Glibc.close(fd) }
        #expect(ctk_peer_is_loopback(fd) == 0)
        var placement = PeerPlacement(fd: fd)
        let shared = placement.peerSharesCPU()
        #expect(!shared)
    }

    /// The kernel processes a loopback segment on the CPU that sent it, so a socket receiving from this thread sees
    /// its peer on this thread's CPU — unless the scheduler moved the thread between the send and the check, hence
    /// a few tries, each with a fresh sample.
    @Test func aLoopbackPeerThatSentFromThisCPUSharesIt() throws {
        let (listener, port) = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { Glibc.close(listener) }
        let client = try Socket.startConnect(host: "127.0.0.1", port: port)
        defer { Glibc.close(client) }
        var accepted: Int32?
        for _ in 0..<2_000 where accepted == nil {
            accepted = try Socket.accept(listener)
            if accepted == nil { usleep(1_000) }
        }
        let server = try #require(accepted)
        defer { Glibc.close(server) }
        #expect(ctk_peer_is_loopback(server) == 1)

        var shared = false
        var buffer = [UInt8](repeating: 0, count: 64)
        for _ in 0..<200 where !shared {
            let sent = try [UInt8(7)].withUnsafeBytes { try Socket.send(client, $0) }
            guard sent == 1 else {
                usleep(1_000)  // still connecting
                continue
            }
            _ = try Socket.read(server, into: &buffer)
            var placement = PeerPlacement(fd: server)
            shared = placement.peerSharesCPU()
        }
        #expect(shared)
    }
}
