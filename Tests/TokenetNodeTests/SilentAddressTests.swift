import Glibc
import Testing
import TokenetTestSupport

/// An address that accepts TCP connections and never answers: the CLI says which stage it waited at and for how long.
@Suite(.timeLimit(.minutes(3))) struct SilentAddressTests {
    @Test func anAddressThatNeverFinishesTheHandshakeIsNamedAsSuch() async throws {
        let listener = try SilentListener()
        defer { close(listener.descriptor) }
        let pki = DevelopmentPKI.shared
        let address = "127.0.0.1:\(listener.port)"
        // A --deadline longer than the CLI's 10 s for connecting, so that what runs out is the connection's time.
        let result = try await runTokenet([
            "list", address, "--deadline", "30s", "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"),
            "--key", pki.path("operator.key"),
        ])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr
                == "tokenet: cannot connect to \(address): it accepted the connection but did not finish the "
                + "handshake within 10 s; check that \(address) is a Tokenet node's address (a node that is paused "
                + "or overloaded answers late)\n")
    }

    /// In plaintext there is no handshake to wait for: the call waits for the peer's hello until the keepalive gives
    /// up, and then says that no hello came (it said "stopped answering", as of a node that had been talking). No
    /// Tokenet node was reached, so the exit status is 1, as over TLS (it was a call's UNAVAILABLE, 78).
    @Test func aPlaintextAddressThatNeverSendsItsHelloIsNamedAsSuch() async throws {
        let listener = try SilentListener()
        defer { close(listener.descriptor) }
        let address = "127.0.0.1:\(listener.port)"
        let result = try await runTokenet(["list", address, "--plaintext"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr
                == "tokenet: cannot connect to \(address): it accepted the connection but sent no hello within 20 s "
                + "(nor answered a keepalive ping): check that \(address) is a Tokenet node's address; the connection "
                + "was closed\n")
    }
}

/// A listening socket that never accepts: the kernel completes each TCP handshake into the backlog, and nothing ever
/// reads or writes.
private struct SilentListener {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SilentListenerError() }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 8) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw SilentListenerError()
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }
}

private struct SilentListenerError: Error {}
