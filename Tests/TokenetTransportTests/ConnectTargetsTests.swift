import Synchronization
import Testing

@testable import TokenetTransport

/// A host's addresses tried in turn: only a TCP connection that could not be made moves on to the next address.
@Suite(.timeLimit(.minutes(3))) struct ConnectTargetsTests {
    static func refused(_ address: String) -> TransportError {
        TransportError(.io, "connect to \(address) refused", isConnectFailure: true)
    }

    @Test func aConnectFailureMovesOnToTheNextAddress() async throws {
        let tried = Mutex<[String]>([])
        let connected = try await ConnectTargets.first(of: ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) { address in
            tried.withLock { $0.append(address) }
            guard address == "10.0.0.2" else { throw Self.refused(address) }
            return address
        }
        #expect(connected == "10.0.0.2")
        #expect(tried.withLock { $0 } == ["10.0.0.1", "10.0.0.2"])
    }

    /// Every address refused: the first address's error is reported, the one the host is usually reached at.
    @Test func whenEveryAddressFailsTheFirstOnesErrorIsReported() async throws {
        let error = await #expect(throws: TransportError.self) {
            _ = try await ConnectTargets.first(of: ["10.0.0.1", "fd00::1"]) { address -> String in
                throw Self.refused(address)
            }
        }
        #expect(error?.message == "connect to 10.0.0.1 refused")
    }

    /// A failure after the TCP connection was made (the TLS handshake) reached the peer: it is the answer, and no
    /// other address is tried; so is a cancellation. A later address that fails so is reported as it is.
    @Test func aFailureAfterTheConnectionWasMadeIsTheAnswer() async throws {
        let tried = Mutex<[String]>([])
        let error = await #expect(throws: TransportError.self) {
            _ = try await ConnectTargets.first(of: ["10.0.0.1", "10.0.0.2"]) { address -> String in
                tried.withLock { $0.append(address) }
                throw TransportError(.handshakeFailed, "peer certificate rejected", isRefusal: true)
            }
        }
        #expect(error?.code == .handshakeFailed)
        #expect(tried.withLock { $0 } == ["10.0.0.1"])

        let second = await #expect(throws: TransportError.self) {
            _ = try await ConnectTargets.first(of: ["10.0.0.1", "10.0.0.2"]) { address -> String in
                guard address == "10.0.0.2" else { throw Self.refused(address) }
                throw TransportError(.handshakeFailed, "peer certificate rejected", isRefusal: true)
            }
        }
        #expect(second?.code == .handshakeFailed)
    }

    /// With real sockets: nothing listens at the first address's port, so its connect is refused, and the
    /// connection is made at the second. The refusal comes back through the event loop's connection driver still
    /// marked as a connect failure.
    @Test func aRefusedAddressIsPassedForTheNextOnALiveSocket() async throws {
        let loop = try EventLoop(name: "test-connect-targets")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(host: "127.0.0.1", port: 0, on: loop)
        // 127.0.0.2 is loopback too, but nothing listens there.
        let refusal = await #expect(throws: TransportError.self) {
            _ = try await PlainConnection.connect(host: "127.0.0.2", port: listener.port, on: loop)
        }
        #expect(refusal?.isConnectFailure == true, "\(String(describing: refusal))")
        let connection = try await ConnectTargets.first(of: ["127.0.0.2", "127.0.0.1"]) { address in
            try await PlainConnection.connect(host: address, port: listener.port, on: loop)
        }
        var accepted = listener.connections.makeAsyncIterator()
        let served = try #require(await accepted.next())
        await connection.close()
        await served.close()
        await listener.close()
    }
}
