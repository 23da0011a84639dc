import COpenSSL
import CTokenetShims

/// The BIO between OpenSSL and a `TLSEngine`'s two `ByteQueue`s.
///
/// OpenSSL reads received records from `inbound` and appends the records it produces to `outbound`; the driver
/// reads the socket straight into `inbound` and sends straight from `outbound`. With memory BIOs each direction
/// took one more copy (the socket's bytes into the BIO, the BIO's records out to a send buffer): for 16 KiB
/// messages those copies were about 7 % of each process's CPU time.
///
/// Like a memory BIO it never refuses a write, so OpenSSL never reports WANT_WRITE; an empty `inbound` reads as
/// "retry" until the transport reports end-of-file, then as end-of-file.
final class EngineBuffers {
    let inbound = ByteQueue(initialCapacity: 64 * 1024)
    let outbound = ByteQueue()
    var endOfFile = false

    /// A new BIO over these buffers; the buffers must outlive it (the engine frees its SSL object, and with it
    /// the BIO, in its deinit).
    func makeBIO() -> OpaquePointer? {
        guard let method = EngineBuffers.method, let bio = BIO_new(method) else { return nil }
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        BIO_set_init(bio, 1)
        return bio
    }

    /// Runs `body` on the buffers behind `bio` without retaining them: the engine that owns the BIO owns the
    /// buffers too, and OpenSSL calls these methods several times per record (a retain and release each time
    /// took about 1.4 % of a ping-pong's CPU time).
    private static func withBuffers<Result>(_ bio: OpaquePointer?, _ body: (EngineBuffers) -> Result) -> Result {
        Unmanaged<EngineBuffers>.fromOpaque(BIO_get_data(bio)!)._withUnsafeGuaranteedRef(body)
    }

    /// Created once per process; OpenSSL keeps it for the lifetime of every BIO made from it.
    nonisolated(unsafe) private static let method: OpaquePointer? = {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tokenet engine buffers")
        else { return nil }
        _ = BIO_meth_set_write_ex(method) { bio, data, length, written in
            ctk_bio_clear_retry_flags(bio)
            EngineBuffers.withBuffers(bio) { $0.outbound.append(UnsafeRawBufferPointer(start: data, count: length)) }
            written?.pointee = length
            return 1
        }
        _ = BIO_meth_set_read_ex(method) { bio, data, length, readBytes in
            ctk_bio_clear_retry_flags(bio)
            return EngineBuffers.withBuffers(bio) { buffers in
                let count = buffers.inbound.take(into: UnsafeMutableRawBufferPointer(start: data, count: length))
                readBytes?.pointee = count
                if count > 0 { return 1 }
                if !buffers.endOfFile { ctk_bio_set_retry_read(bio) }
                return 0
            }
        }
        _ = BIO_meth_set_ctrl(method) { bio, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH: return 1
            case BIO_CTRL_PENDING: return EngineBuffers.withBuffers(bio) { $0.inbound.count }
            case BIO_CTRL_WPENDING: return EngineBuffers.withBuffers(bio) { $0.outbound.count }
            case BIO_CTRL_EOF: return EngineBuffers.withBuffers(bio) { $0.endOfFile && $0.inbound.isEmpty } ? 1 : 0
            default: return 0
            }
        }
        return method
    }()
}
