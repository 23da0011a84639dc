import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Owns every C allocation made while building a protobuf-c message tree from Swift values.
///
/// protobuf-c packs from plain C structs; building one needs memory for the structs, their strings, byte buffers
/// and repeated arrays. They all live exactly as long as one encode (or one JSON decode), so a single arena frees
/// them together in `deinit`, and nothing the C library never allocated is ever handed to
/// `protobuf_c_message_free_unpacked`.
///
/// Small pieces are carved out of a few larger blocks: an RPC frame needs half a dozen of them per message sent,
/// and one allocation instead of one each is measurably cheaper on the hot path.
final class ProtoArena {
    /// Alignment of every piece: enough for any C scalar or pointer.
    private static let alignment = 16
    /// Size of the first block; later blocks double, up to `largestBlock`.
    private static let firstBlock = 512
    private static let largestBlock = 64 * 1024
    /// Pieces at least this large get a block of their own.
    private static let ownBlockThreshold = 1024

    // Unchecked for exclusivity: an arena belongs to one encode on one thread, and the runtime's check on each
    // access cost three calls into the Swift runtime per message encoded.
    @exclusivity(unchecked) private var blocks: [UnsafeMutableRawPointer] = []
    /// Free space left in the current block.
    @exclusivity(unchecked) private var cursor: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var remaining = 0
    @exclusivity(unchecked) private var nextBlockSize = ProtoArena.firstBlock
    /// `bytes` values whose storage the C structs point into; holding them keeps that storage alive and unchanged.
    @exclusivity(unchecked) private var borrowed: [Data] = []

    init() {}

    /// An arena that carves its first pieces out of `scratch` (typically stack memory of the encode, so encoding an
    /// RPC frame allocates nothing for its C structs). `scratch` must outlive the arena; it is never freed here.
    init(scratch: UnsafeMutableRawBufferPointer) {
        if let base = scratch.baseAddress, scratch.count >= Self.alignment {
            cursor = base
            remaining = scratch.count & ~(Self.alignment - 1)
            nextBlockSize = Self.firstBlock * 2
        }
    }

    /// Bytes of stack scratch an encode offers its arena: enough for every frame the RPC layer sends.
    static let scratchSize = 1024

    deinit {
        for block in blocks {
            free(block)
        }
    }

    /// Zeroed memory of `byteCount` bytes (at least one), aligned for any C scalar.
    func allocate(byteCount: Int) -> UnsafeMutableRawPointer {
        let size = (max(byteCount, 1) + Self.alignment - 1) & ~(Self.alignment - 1)
        if size >= Self.ownBlockThreshold {
            return newBlock(size)
        }
        if size > remaining {
            let blockSize = nextBlockSize
            nextBlockSize = min(nextBlockSize * 2, Self.largestBlock)
            cursor = newBlock(blockSize, zeroed: false)
            remaining = blockSize
        }
        let piece = cursor!
        cursor = piece + size
        remaining -= size
        // Blocks come from malloc and the first one may be scratch: zero each piece as it is handed out.
        piece.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        return piece
    }

    /// A block owned by the arena, zeroed unless `zeroed` is false.
    private func newBlock(_ byteCount: Int, zeroed: Bool = true) -> UnsafeMutableRawPointer {
        guard let block = zeroed ? calloc(1, byteCount) : malloc(byteCount) else {
            fatalError("Tokenet: out of memory allocating \(byteCount) bytes")
        }
        blocks.append(block)
        return block
    }

    /// A NUL-terminated copy of `string`; a string containing NUL cannot be expressed in protobuf-c.
    func cString(_ string: String, field: @autoclosure () -> String) throws -> UnsafeMutablePointer<CChar> {
        var string = string
        let copy: UnsafeMutablePointer<UInt8>? = string.withUTF8 { bytes in
            if let base = bytes.baseAddress, memchr(base, 0, bytes.count) != nil { return nil }
            let block = allocate(byteCount: bytes.count + 1).assumingMemoryBound(to: UInt8.self)
            if let base = bytes.baseAddress { block.update(from: base, count: bytes.count) }
            return block
        }
        guard let copy else {
            throw WireError(.unencodableValue, "string field \"\(field())\" contains a NUL character")
        }
        return UnsafeMutableRawPointer(copy).assumingMemoryBound(to: CChar.self)
    }

    /// At least this many bytes are pointed to in place rather than copied (see `bytes(of:)`).
    private static let borrowThreshold = 256

    /// The bytes of `data` for a `bytes` field, valid as long as the arena.
    ///
    /// Large values are not copied: the arena keeps the `Data`, whose heap storage (every `Data` longer than a few
    /// words has one) neither moves nor changes while a reference to it is held, so protobuf-c packs straight from
    /// it and a payload is copied once on its way into a frame instead of twice. Small values are copied: their
    /// bytes may live inside the `Data` value itself, and a copy of a few bytes costs less than keeping the value.
    func bytes(of data: Data) -> UnsafeMutablePointer<UInt8>? {
        guard data.count >= Self.borrowThreshold else {
            return data.withUnsafeBytes { copy($0) }
        }
        borrowed.append(data)
        let base = data.withUnsafeBytes { $0.baseAddress }
        return base.map { UnsafeMutableRawPointer(mutating: $0).assumingMemoryBound(to: UInt8.self) }
    }

    /// A copy of `bytes` that lives as long as the arena.
    func copy(_ bytes: UnsafeRawBufferPointer) -> UnsafeMutablePointer<UInt8>? {
        guard bytes.count > 0, let base = bytes.baseAddress else { return nil }
        let block = allocate(byteCount: bytes.count)
        block.copyMemory(from: base, byteCount: bytes.count)
        return block.assumingMemoryBound(to: UInt8.self)
    }
}
