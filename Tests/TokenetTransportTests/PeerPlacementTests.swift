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
        let sockets = try SocketPair(host: "127.0.0.1")
        defer { withExtendedLifetime(sockets) {} }
        let (client, server) = (sockets.client, sockets.server)
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

/// A listening socket on `host`, a client connected to it and the server's end, closed on deinit: the plain sockets
/// of the transport, without a loop.
final class SocketPair {
    let listener: Int32
    let client: Int32
    let server: Int32

    init(host: String) throws {
        let (listener, port) = try Socket.listen(host: host, port: 0)
        var client: Int32 = -1
        do {
            client = try Socket.startConnect(host: host, port: port)
            var accepted: Int32?
            for _ in 0..<2_000 where accepted == nil {
                accepted = try Socket.accept(listener)
                if accepted == nil { usleep(1_000) }
            }
            guard let accepted else { throw TransportError(.timeout, "nothing accepted within 2 s") }
            self.server = accepted
        } catch {
            if client >= 0 { Glibc.close(client) }
            Glibc.close(listener)
            throw error
        }
        self.listener = listener
        self.client = client
    }

    deinit {
        for fd in [server, client, listener] { Glibc.close(fd) }
    }
}
