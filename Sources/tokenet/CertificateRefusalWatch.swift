import Synchronization
import TokenetRPC
import TokenetTransport

/// A TLS connection that remembers the node's refusal of the CLI's certificate.
///
/// In TLS 1.3 the node checks the client's certificate after the client's handshake has finished, so a refusal
/// arrives as an alert at the first read, and the RPC layer turns it into UNAVAILABLE "connection lost" for the
/// calls. The command looks here to report it instead as what it is: a certificate to fix, not a node to wait for.
final class CertificateRefusalWatch: ByteStream {
    private let connection: TLSConnection
    private let seen = Mutex<TransportError?>(nil)

    init(_ connection: TLSConnection) {
        self.connection = connection
    }

    /// The refusal, once a read or write has failed with one.
    var refusal: TransportError? { seen.withLock { $0 } }

    private func note(_ error: any Error) {
        guard let error = error as? TransportError, error.code == .certificateRefused else { return }
        seen.withLock { $0 = $0 ?? error }
    }

    var peerIdentity: PeerIdentity? { connection.peer }
    var loop: EventLoop? { connection.eventLoop }

    func read() async throws -> [UInt8]? {
        do {
            return try await connection.read()
        } catch {
            note(error)
            throw error
        }
    }

    func receive(_ handler: @escaping @Sendable (Result<[UInt8]?, any Error>) -> Void) -> Bool {
        connection.receive { [self] result in
            if case .failure(let error) = result { note(error) }
            handler(result)
        }
    }

    /// A write can be what fails first: the node hangs up after its alert, and the send then breaks.
    func write(_ bytes: [UInt8]) async throws {
        do {
            try await connection.write(bytes)
        } catch {
            note(error)
            throw error
        }
    }

    func writeIgnoringCancellation(_ bytes: [UInt8]) async throws {
        do {
            try await connection.writeIgnoringCancellation(bytes)
        } catch {
            note(error)
            throw error
        }
    }

    func writeOnLoop(_ bytes: [UInt8], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        connection.writeOnLoop(bytes) { [self] result in
            if case .failure(let error) = result { note(error) }
            completion(result)
        }
    }

    func peerSharesCPU() -> Bool { connection.peerSharesCPU() }

    func close() async { await connection.close() }
}
