import COpenSSL
import CTokenetShims

/// One TLS session as a pure byte transformer: no sockets, no threads, no clocks.
///
/// The owner shuttles bytes: `receiveCiphertext` what arrived from the network, `handshake()` until it reports
/// completion, then `readPlaintext()` / `writePlaintext(_:)`, and after every step `takeCiphertext()` whatever
/// must be sent. Both buffers (`EngineBuffers`) grow as needed, so OpenSSL never reports WANT_WRITE; the owner
/// bounds memory by deciding how much it feeds in (see `ConnectionStateMachine`). WANT_READ surfaces as
/// `.needsMoreData`.
///
/// Not thread-safe: an engine belongs to one event loop (or one test).
public final class TLSEngine {
    public enum HandshakeStatus: Equatable, Sendable {
        case complete
        case needsMoreData
    }

    public enum ReadResult: Equatable, Sendable {
        case plaintext([UInt8])
        case needsMoreData
        /// The peer sent close_notify: no more data will arrive.
        case closed
    }

    public let side: TLSConfiguration.Side
    private let context: TLSContext
    private let ssl: OpaquePointer
    /// Ciphertext from the network, read by OpenSSL, and ciphertext OpenSSL produced, to be sent.
    private let buffers = EngineBuffers()
    private let verification: VerificationState
    /// Decrypted bytes land here first, so a read that finds no complete record allocates nothing and a short
    /// record costs an allocation of its own size, not of the largest possible one.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
    // Unchecked for exclusivity, as the driver's properties are (see `ConnectionDriver`): an engine is used by its
    // driver alone, on one loop thread, and two of these are read on every record.
    @exclusivity(unchecked) private var receivedEOF = false
    @exclusivity(unchecked) private var failed = false
    @exclusivity(unchecked) public private(set) var isHandshakeComplete = false
    @exclusivity(unchecked) public private(set) var peer: PeerIdentity?

    public init(context: TLSContext) throws(TransportError) {
        self.context = context
        side = context.configuration.side
        verification = VerificationState(acceptedRoles: context.configuration.acceptedPeerRoles)
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else {
            throw TransportError.openSSL(.configuration, "SSL_new failed")
        }
        guard let bio = buffers.makeBIO() else {
            SSL_free(ssl)
            throw TransportError.openSSL(.configuration, "BIO_new failed")
        }
        SSL_set_bio(ssl, bio, bio)  // one BIO for both directions; the SSL object now owns it
        self.ssl = ssl
        _ = ctk_ssl_set_app_data(ssl, Unmanaged.passUnretained(verification).toOpaque())
        if side == .server { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
    }

    deinit {
        SSL_free(ssl)
        scratch.deallocate()
    }

    // MARK: Network side

    /// Hands ciphertext received from the network to OpenSSL.
    public func receiveCiphertext(_ bytes: UnsafeRawBufferPointer) {
        buffers.inbound.append(bytes)
    }

    /// Free space of at least `minimum` bytes for the driver to read the socket into, then `ciphertextReceived`.
    func ciphertextSpace(atLeast minimum: Int) -> UnsafeMutableRawBufferPointer {
        buffers.inbound.freeSpace(atLeast: minimum)
    }

    /// `count` bytes were written into the space `ciphertextSpace` returned.
    func ciphertextReceived(_ count: Int) {
        buffers.inbound.commit(count)
    }

    public func receiveCiphertext(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { receiveCiphertext($0) }
    }

    /// Records that the transport delivered end-of-file: OpenSSL then sees EOF once the buffered bytes are used.
    public func receiveEOF() {
        receivedEOF = true
        buffers.endOfFile = true
    }

    /// Bytes OpenSSL produced that still have to be sent.
    public var pendingCiphertextCount: Int { buffers.outbound.count }

    /// The ciphertext waiting to be sent, in place, for the driver to hand to the socket and then `dropCiphertext`.
    /// Valid until the next call on the engine.
    var pendingCiphertext: UnsafeRawBufferPointer { buffers.outbound.bytes }

    /// Forgets the first `count` bytes of `pendingCiphertext`: the socket took them.
    func dropCiphertext(_ count: Int) {
        buffers.outbound.consume(count)
    }

    /// Moves all pending ciphertext onto the end of `buffer`, copying it once.
    func takeCiphertext(appendingTo buffer: inout [UInt8]) {
        buffer.append(contentsOf: buffers.outbound.bytes)
        buffers.outbound.consume(buffers.outbound.count)
    }

    /// Takes up to `maxCount` bytes of ciphertext to send.
    public func takeCiphertext(maxCount: Int = Int.max) -> [UInt8] {
        let count = min(pendingCiphertextCount, maxCount)
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = buffers.outbound.take(into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    // MARK: Session

    /// Advances the handshake with the ciphertext received so far.
    public func handshake() throws(TransportError) -> HandshakeStatus {
        if isHandshakeComplete { return .complete }
        try checkUsable()
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            isHandshakeComplete = true
            peer = verification.identity
            if peer == nil {
                // The verify callback always sets an identity on success; this guards against a misconfiguration
                // that would skip verification.
                failed = true
                throw TransportError(.peerIdentity, "handshake completed without a verified peer identity")
            }
            return .complete
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            if receivedEOF && buffers.inbound.isEmpty {
                failed = true
                throw TransportError(.unexpectedEOF, "connection closed by peer during the TLS handshake")
            }
            return .needsMoreData
        default:
            let error = fail(.handshakeFailed, "TLS handshake failed")
            // OpenSSL's "unsupported protocol" (what the peer offered) and "alert protocol version" (what the peer
            // said of this side's offer) name no version and no way out.
            if error.code == .handshakeFailed, error.details.contains(where: Self.meansOlderTLS) {
                throw TransportError(
                    .handshakeFailed,
                    "TLS handshake failed: the peer speaks an older TLS than 1.3, which Tokenet requires on both "
                        + "sides; use a TLS 1.3 client or server (openssl s_client -tls1_3)", details: error.details,
                    isRefusal: true)
            }
            guard error.code == .handshakeFailed, error.details.contains(where: Self.meansPeerIsNotTLS) else {
                throw error
            }
            throw TransportError(
                .handshakeFailed,
                "TLS handshake failed: the peer does not speak TLS (a node or client started with --plaintext, "
                    + "or another protocol)", details: error.details, isRefusal: true)
        }
    }

    /// OpenSSL's reasons for a peer whose highest TLS version is below 1.3: offered by a client ("unsupported
    /// protocol" on the server), or announced by a server's alert ("tlsv1 alert protocol version" on the client).
    private static func meansOlderTLS(_ detail: String) -> Bool {
        detail.hasSuffix("unsupported protocol") || detail.hasSuffix("alert protocol version")
    }

    /// OpenSSL's reasons for a first record that is no TLS at all: the usual sign that one side runs with
    /// `--plaintext` and the other does not, which the bare reason ("wrong version number") does not tell.
    private static func meansPeerIsNotTLS(_ detail: String) -> Bool {
        detail.hasSuffix("wrong version number") || detail.hasSuffix("http request")
            || detail.hasSuffix("packet length too long")
    }

    /// Decrypts up to `maxCount` bytes of application data.
    public func readPlaintext(maxCount: Int = 16 * 1024) throws(TransportError) -> ReadResult {
        var bytes: [UInt8] = []
        switch try readPlaintext(appendingTo: &bytes, maxCount: maxCount) {
        case .appended: return .plaintext(bytes)
        case .needsMoreData: return .needsMoreData
        case .closed: return .closed
        }
    }

    /// What `readPlaintext(appendingTo:maxCount:)` did.
    enum AppendResult: Equatable {
        case appended(Int)
        case needsMoreData
        case closed
    }

    /// Decrypts up to `maxCount` bytes and appends them to `buffer`: the driver collects a whole read's records
    /// in one array without an intermediate array per record.
    func readPlaintext(appendingTo buffer: inout [UInt8], maxCount: Int) throws(TransportError) -> AppendResult {
        let result = try readPlaintext(
            into: UnsafeMutableRawBufferPointer(rebasing: scratch[..<min(max(maxCount, 1), scratch.count)]))
        if case .appended(let count) = result {
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<count]))
        }
        return result
    }

    /// At least the number of plaintext bytes that reading now can produce: the buffered ciphertext (records only
    /// shrink when decrypted) plus what OpenSSL holds already decrypted, plus a whole record when OpenSSL holds the
    /// start of one that the buffered bytes may complete (a 16 KiB record often spans two socket reads): without
    /// it the driver's array came out short and had to grow, copying everything decrypted so far.
    var plaintextBound: Int {
        let buffered = buffers.inbound.count
        let decrypted = Int(SSL_pending(ssl))
        let partialRecord = buffered > 0 && decrypted == 0 && SSL_has_pending(ssl) == 1 ? Self.maxRecordPlaintext : 0
        return buffered + decrypted + partialRecord
    }

    /// The most plaintext one TLS record carries.
    static let maxRecordPlaintext = 16 * 1024

    /// Decrypts into `buffer` (not empty) directly, so the driver can fill the array it hands to its reader with
    /// no intermediate copy. `.appended(n)`: the first n bytes of `buffer` hold plaintext.
    func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> AppendResult {
        try checkUsable()
        guard isHandshakeComplete else { throw TransportError(.invalidState, "read before the handshake completed") }
        var readCount = 0
        Self.clearErrorQueue()
        let result = SSL_read_ex(ssl, buffer.baseAddress, max(buffer.count, 1), &readCount)
        if result == 1 {
            return .appended(readCount)
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            if receivedEOF && buffers.inbound.isEmpty {
                failed = true
                throw TransportError(.unexpectedEOF, "connection closed by peer without TLS close_notify")
            }
            return .needsMoreData
        case SSL_ERROR_ZERO_RETURN:
            return .closed
        case SSL_ERROR_SSL where receivedEOF && buffers.inbound.isEmpty:
            // The server may send its alert and close at once; the alert is the reason then, not the close.
            throw fail(.unexpectedEOF, "connection closed by peer without TLS close_notify", alertsAreRefusals: true)
        case SSL_ERROR_SYSCALL where receivedEOF:
            throw fail(.unexpectedEOF, "connection closed by peer without TLS close_notify")
        default:
            throw fail(.tls, "TLS read failed", alertsAreRefusals: true)
        }
    }

    /// Encrypts all of `bytes`; the records are then available through `takeCiphertext`.
    public func writePlaintext(_ bytes: UnsafeRawBufferPointer) throws(TransportError) {
        try checkUsable()
        guard isHandshakeComplete else { throw TransportError(.invalidState, "write before the handshake completed") }
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            var written = 0
            Self.clearErrorQueue()
            let result = SSL_write_ex(ssl, base + offset, bytes.count - offset, &written)
            guard result == 1 else { throw fail(.tls, "TLS write failed") }
            offset += written
        }
    }

    public func writePlaintext(_ bytes: [UInt8]) throws(TransportError) {
        let error: TransportError? = bytes.withUnsafeBytes { buffer in
            do throws(TransportError) {
                try writePlaintext(buffer)
                return nil
            } catch {
                return error
            }
        }
        if let error { throw error }
    }

    /// Queues a close_notify alert (sent with the next `takeCiphertext`). Safe to call more than once.
    public func close() {
        guard !failed, isHandshakeComplete else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// Why the peer's certificate was refused, when the verify callback refused it.
    var verificationFailure: TransportError? { verification.failure }

    /// `SSL_get_error` reads the thread's error queue, so it must be empty before each TLS call. Clearing walks
    /// all of its slots; looking first costs less on the path every record takes, where it is almost always empty.
    private static func clearErrorQueue() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    private func checkUsable() throws(TransportError) {
        if failed { throw TransportError(.invalidState, "TLS engine used after a fatal error") }
    }

    /// Marks the engine unusable (OpenSSL forbids further calls after a fatal error) and builds the error,
    /// preferring the identity check's own reason over OpenSSL's generic "certificate verify failed".
    /// With `alertsAreRefusals` (a read after the handshake), a certificate alert received by a client becomes
    /// `.certificateRefused` naming the alert.
    private func fail(_ code: TransportError.Code, _ message: String, alertsAreRefusals: Bool = false) -> TransportError
    {
        failed = true
        let errors = TransportError.drainOpenSSLErrorCodes()
        let details = errors.map(TransportError.text(ofOpenSSLError:))
        if let failure = verification.failure {
            return TransportError(failure.code, failure.message, details: details, isRefusal: failure.isRefusal)
        }
        if alertsAreRefusals, side == .client, let alert = errors.lazy.compactMap(Self.certificateAlert).first {
            return TransportError(
                .certificateRefused, "the server refused this client's certificate (\(alert))", details: details)
        }
        return TransportError(code, message, details: details)
    }

    /// The description of a received alert that refuses a certificate ("certificate expired", "unknown ca"), or nil
    /// for any other error. In TLS 1.3 only the client's certificate flight is still unchecked once the client's
    /// handshake is done, so such an alert at a client's read is about its own certificate; `handshake_failure` is
    /// what a server sends for a certificate without a usable Tokenet identity.
    private static func certificateAlert(_ error: UInt) -> String? {
        guard ERR_GET_LIB(error) == ERR_LIB_SSL else { return nil }
        return refusalAlerts[ERR_GET_REASON(error) - Int32(SSL_AD_REASON_OFFSET)]
    }

    /// The alerts of RFC 8446 §6.2 that refuse a certificate, by code. OpenSSL 3.0's own table has no name for
    /// certificate_required, TLS 1.3's alert for a client without a certificate.
    private static let refusalAlerts: [Int32: String] = [
        40: "handshake failure", 42: "bad certificate", 43: "unsupported certificate", 44: "certificate revoked",
        45: "certificate expired", 46: "certificate unknown", 48: "unknown CA", 49: "access denied",
        51: "decrypt error", 116: "certificate required",
    ]
}
