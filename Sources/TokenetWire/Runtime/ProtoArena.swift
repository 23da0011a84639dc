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
final class ProtoArena {
    private var blocks: [UnsafeMutableRawPointer] = []

    init() {
        blocks.reserveCapacity(8)
    }

    deinit {
        for block in blocks {
            free(block)
        }
    }

    /// Zeroed memory of `byteCount` bytes (at least one), aligned for any C scalar.
    func allocate(byteCount: Int) -> UnsafeMutableRawPointer {
        guard let block = calloc(1, max(byteCount, 1)) else {
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

    /// A copy of `bytes` that lives as long as the arena.
    func copy(_ bytes: UnsafeRawBufferPointer) -> UnsafeMutablePointer<UInt8>? {
        guard bytes.count > 0, let base = bytes.baseAddress else { return nil }
        let block = allocate(byteCount: bytes.count)
        block.copyMemory(from: base, byteCount: bytes.count)
        return block.assumingMemoryBound(to: UInt8.self)
    }
}
