import Foundation

/// The four frames every call carries — its start, a message, the end of the requests, a status without details or
/// trailers — written and read by hand, byte for byte as the generated protobuf-c codec writes them.
///
/// A unary call is five frames, and going through the generic codec costs each of them a C struct tree built in an
/// arena, a descriptor-driven pack or unpack and a malloc'd copy of the message bytes: about a fifth of the CPU time
/// of a small call. These shapes are simple enough to write directly:
///
///     Frame         { 1: stream_id (varint, omitted when 0);
///                     3: CallStart | 4: Message | 5: HalfClose | 6: Status }
///     CallStart     { 1: method (string, omitted when empty); 2: metadata (MetadataEntry, repeated);
///                     3: timeout_micros (varint, when set) }
///     MetadataEntry { 1: key (string, omitted when empty); 2: text (string) | 3: binary (bytes) }
///     Message       { 1: data (bytes, omitted when empty) }
///     Status        { 1: code (varint, omitted when OK); 2: message (string, omitted when empty) }
///
/// `Protos/tokenet/wire/v1/frame.proto` stays the definition: the encoder produces exactly the bytes
/// `appendSerializedBytes` produces (`FrameFastPathTests` compares them over many frames), and the decoder accepts
/// only that canonical form. Anything else — other kinds, other field orders, unknown fields, a string the generic
/// codec would treat differently — returns nil/false and takes the generic path, so both paths agree on every input.
public enum FrameFastPath {
    // Tags: field number << 3 | wire type.
    private static let streamIDTag: UInt8 = 0x08  // 1, varint
    private static let messageTag: UInt8 = 0x22  // 4, length-delimited
    private static let halfCloseTag: UInt8 = 0x2A  // 5, length-delimited
    private static let callStartTag: UInt8 = 0x1A  // 3, length-delimited
    private static let methodTag: UInt8 = 0x0A  // CallStart.method: 1, length-delimited
    private static let metadataTag: UInt8 = 0x12  // CallStart.metadata: 2, length-delimited
    private static let timeoutTag: UInt8 = 0x18  // CallStart.timeout_micros: 3, varint
    private static let keyTag: UInt8 = 0x0A  // MetadataEntry.key: 1, length-delimited
    private static let textTag: UInt8 = 0x12  // MetadataEntry.text: 2, length-delimited
    private static let binaryTag: UInt8 = 0x1A  // MetadataEntry.binary: 3, length-delimited
    private static let statusTag: UInt8 = 0x32  // 6, length-delimited
    private static let dataTag: UInt8 = 0x0A  // Message.data: 1, length-delimited
    private static let codeTag: UInt8 = 0x08  // Status.code: 1, varint
    private static let statusMessageTag: UInt8 = 0x12  // Status.message: 2, length-delimited

    // MARK: Encoding

    /// Appends `frame`'s serialization (without the length prefix) when it has one of the three shapes; false,
    /// with `buffer` untouched, otherwise.
    static func append(_ frame: WireV1.Frame, to buffer: inout [UInt8]) -> Bool {
        switch frame.kind {
        case .message(let message)?:
            appendMessageHeader(streamID: frame.streamID, dataCount: message.data.count, to: &buffer)
            message.data.withUnsafeBytes { buffer.append(contentsOf: $0.bindMemory(to: UInt8.self)) }
            return true
        case .callStart(let start)?:
            return append(start, streamID: frame.streamID, to: &buffer)
        case .halfClose?:
            appendStreamID(frame.streamID, to: &buffer)
            buffer.append(halfCloseTag)
            buffer.append(0)
            return true
        case .status(let status)?:
            guard status.details.isEmpty, status.trailers.isEmpty, status.code.rawValue >= 0 else { return false }
            let code = UInt64(status.code.rawValue)
            let text = status.message.utf8
            // protobuf-c carries strings as C strings: a NUL is the generic codec's error to report.
            guard !hasNUL(text) else { return false }
            let codeSize = code == 0 ? 0 : 1 + varintSize(code)
            let textSize = text.isEmpty ? 0 : 1 + varintSize(UInt64(text.count)) + text.count
            appendStreamID(frame.streamID, to: &buffer)
            buffer.append(statusTag)
            appendVarint(UInt64(codeSize + textSize), to: &buffer)
            if code != 0 {
                buffer.append(codeTag)
                appendVarint(code, to: &buffer)
            }
            if !text.isEmpty {
                buffer.append(statusMessageTag)
                appendVarint(UInt64(text.count), to: &buffer)
                buffer.append(contentsOf: text)
            }
            return true
        default:
            return false
        }
    }

    /// Everything of a message frame before its data bytes; `dataCount` of them must follow.
    static func appendMessageHeader(streamID: UInt32, dataCount count: Int, to buffer: inout [UInt8]) {
        let body = count == 0 ? 0 : 1 + varintSize(UInt64(count)) + count
        buffer.reserveCapacity(buffer.count + 16 + body)
        appendStreamID(streamID, to: &buffer)
        buffer.append(messageTag)
        appendVarint(UInt64(body), to: &buffer)
        if count > 0 {
            buffer.append(dataTag)
            appendVarint(UInt64(count), to: &buffer)
        }
    }

    private static func append(_ start: WireV1.CallStart, streamID: UInt32, to buffer: inout [UInt8]) -> Bool {
        // protobuf-c carries strings as C strings: a NUL is the generic codec's error to report.
        guard !hasNUL(start.method.utf8) else { return false }
        // The entries are read in place, through the array's buffer: iterating the array would copy each entry
        // (a retain and a release of its key and value), twice per call.
        return start.metadata.withUnsafeBufferPointer { entries in
            var bodySize = fieldSize(start.method.utf8.count, omittedWhenEmpty: true)
            for index in entries.indices {
                guard !hasNUL(entries[index].key.utf8) else { return false }
                if case .text(let text)? = entries[index].value, hasNUL(text.utf8) { return false }
                bodySize += fieldSize(entryBodySize(entries[index]), omittedWhenEmpty: false)
            }
            if let timeout = start.timeoutMicros { bodySize += 1 + varintSize(timeout) }
            appendStreamID(streamID, to: &buffer)
            buffer.append(callStartTag)
            appendVarint(UInt64(bodySize), to: &buffer)
            appendString(start.method, tag: methodTag, omittedWhenEmpty: true, to: &buffer)
            for index in entries.indices {
                buffer.append(metadataTag)
                appendVarint(UInt64(entryBodySize(entries[index])), to: &buffer)
                appendString(entries[index].key, tag: keyTag, omittedWhenEmpty: true, to: &buffer)
                switch entries[index].value {
                case .text(let text)?: appendString(text, tag: textTag, omittedWhenEmpty: false, to: &buffer)
                case .binary(let data)?:
                    buffer.append(binaryTag)
                    appendVarint(UInt64(data.count), to: &buffer)
                    data.withUnsafeBytes { buffer.append(contentsOf: $0.bindMemory(to: UInt8.self)) }
                case nil: break
                }
            }
            if let timeout = start.timeoutMicros {
                buffer.append(timeoutTag)
                appendVarint(timeout, to: &buffer)
            }
            return true
        }
    }

    /// The encoded size of a metadata entry's fields, computed again when writing them: cheaper than keeping the
    /// sizes in an array, which would be a heap allocation per call.
    private static func entryBodySize(_ entry: WireV1.MetadataEntry) -> Int {
        var size = fieldSize(entry.key.utf8.count, omittedWhenEmpty: true)
        switch entry.value {
        case .text(let text)?: size += fieldSize(text.utf8.count, omittedWhenEmpty: false)
        case .binary(let data)?: size += fieldSize(data.count, omittedWhenEmpty: false)
        case nil: break
        }
        return size
    }

    /// Whether `text` holds a NUL byte, searched with `memchr` in the string's own storage.
    private static func hasNUL(_ text: String.UTF8View) -> Bool {
        text.withContiguousStorageIfAvailable { bytes in
            bytes.count > 0 && memchr(bytes.baseAddress!, 0, bytes.count) != nil
        } ?? text.contains(0)
    }

    /// The size of a length-delimited field of `count` bytes: tag, length, bytes.
    private static func fieldSize(_ count: Int, omittedWhenEmpty: Bool) -> Int {
        count == 0 && omittedWhenEmpty ? 0 : 1 + varintSize(UInt64(count)) + count
    }

    private static func appendString(_ text: String, tag: UInt8, omittedWhenEmpty: Bool, to buffer: inout [UInt8]) {
        let utf8 = text.utf8
        if utf8.isEmpty && omittedWhenEmpty { return }
        buffer.append(tag)
        appendVarint(UInt64(utf8.count), to: &buffer)
        buffer.append(contentsOf: utf8)
    }

    private static func appendStreamID(_ id: UInt32, to buffer: inout [UInt8]) {
        guard id != 0 else { return }
        buffer.append(streamIDTag)
        appendVarint(UInt64(id), to: &buffer)
    }

    private static func appendVarint(_ value: UInt64, to buffer: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            buffer.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        buffer.append(UInt8(value))
    }

    static func varintSize(_ value: UInt64) -> Int {
        var size = 1
        var value = value >> 7
        while value != 0 {
            size += 1
            value >>= 7
        }
        return size
    }

    // MARK: Decoding

    /// Message data from this size on is not copied out of the received bytes. Below it a copy costs less than the
    /// deallocator a shared `Data` needs, and a small message should not keep a whole read's bytes alive.
    static let noCopyThreshold = 1024

    /// Whether message data of `count` bytes may stay in received bytes whose storage holds `storageByteCount`: only
    /// when it takes at least half of them. A message keeps all of that storage alive for as long as its handler holds
    /// it; a peer that sent each 1 KiB request of a call left waiting with some 70 KiB of other frames made every
    /// request it held cost 70 times its size, past any budget that counts requests by their size.
    static func staysInPlace(_ count: Int, storageByteCount: Int) -> Bool {
        count >= noCopyThreshold && count >= storageByteCount / 2
    }

    /// The most memory received message data of `count` bytes may keep alive: twice its size when it may stay in
    /// place (the storage it lies in is at most twice as large), its own size when it is copied out. A budget of held
    /// messages counts this, not `count`, or it would hold twice what it allows.
    public static func heldByteBound(ofMessage count: Int) -> Int {
        count >= noCopyThreshold ? 2 * count : count
    }

    /// The frame in `bytes` (one frame's body, without the length prefix) when it is in the canonical form of one of
    /// the three shapes; nil otherwise, for the generic decoder to read (or reject).
    static func decode(_ bytes: ArraySlice<UInt8>) -> WireV1.Frame? {
        var strings = StringCache()
        return decode(bytes, strings: &strings, storageByteCount: bytes.count)
    }

    /// Strings that arrive on every call of a connection — the method names it calls, the metadata keys it sends —
    /// kept from one frame to the next, so each call start reuses them instead of allocating new ones (a string of
    /// 16 bytes or more, like `tokenet-trace-id` or a method path, lives on the heap). A few entries, replaced
    /// round-robin: a connection that calls many methods still pays at most a comparison per string.
    struct StringCache: Sendable {
        private var entries: [String] = []
        private var next = 0
        private static let capacity = 8

        mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
            for entry in entries where entry.utf8.count == bytes.count {
                let equal = entry.utf8.withContiguousStorageIfAvailable { stored in
                    memcmp(stored.baseAddress!, bytes.baseAddress!, bytes.count) == 0
                }
                if equal ?? entry.utf8.elementsEqual(bytes) { return entry }
            }
            let string = String(decoding: bytes, as: UTF8.self)
            if entries.count < Self.capacity {
                entries.append(string)
            } else {
                entries[next] = string
                next = (next + 1) % Self.capacity
            }
            return string
        }
    }

    /// `storageByteCount`: the size of the storage `bytes` lies in, which message data left in place keeps alive.
    static func decode(_ bytes: ArraySlice<UInt8>, strings: inout StringCache, storageByteCount: Int)
        -> WireV1.Frame?
    {
        bytes.withUnsafeBufferPointer { body in
            var reader = Reader(bytes: body)
            var streamID: UInt32 = 0
            if reader.peek() == streamIDTag {
                reader.skip()
                guard let id = reader.varint(), id != 0, id <= UInt64(UInt32.max) else { return nil }
                streamID = UInt32(id)
            }
            guard let tag = reader.byte(), let length = reader.length(), reader.remaining == length else { return nil }
            switch tag {
            case callStartTag:
                guard let start = readCallStart(&reader, strings: &strings) else { return nil }
                return WireV1.Frame(streamID: streamID, kind: .callStart(start))
            case messageTag:
                if length == 0 { return WireV1.Frame(streamID: streamID, kind: .message(WireV1.Message())) }
                guard reader.byte() == dataTag, let count = reader.length(), count > 0, reader.remaining == count
                else { return nil }
                let data: Data
                if staysInPlace(count, storageByteCount: storageByteCount), let start = body.baseAddress {
                    // A large message stays in the received chunk: the slice, kept by the deallocator, keeps that
                    // storage alive and unchanged (whoever changes their own copy of the array gets new storage).
                    data = Data(
                        bytesNoCopy: UnsafeMutableRawPointer(mutating: start + reader.index), count: count,
                        deallocator: .custom { _, _ in withExtendedLifetime(bytes) {} })
                } else {
                    data = Data(UnsafeBufferPointer(rebasing: body[reader.index...]))
                }
                return WireV1.Frame(streamID: streamID, kind: .message(WireV1.Message(data: data)))
            case halfCloseTag:
                guard length == 0 else { return nil }
                return WireV1.Frame(streamID: streamID, kind: .halfClose(WireV1.HalfClose()))
            case statusTag:
                var status = WireV1.Status()
                if reader.peek() == codeTag {
                    reader.skip()
                    guard let code = reader.varint(), code != 0, code <= UInt64(Int32.max) else { return nil }
                    status.code = WireV1.StatusCode(rawValue: Int32(code))
                }
                if reader.peek() == statusMessageTag {
                    reader.skip()
                    guard let count = reader.length(), count > 0, reader.remaining == count else { return nil }
                    guard let text = reader.asciiText(count) else { return nil }
                    status.message = text
                }
                guard reader.remaining == 0 else { return nil }
                return WireV1.Frame(streamID: streamID, kind: .status(status))
            default:
                return nil
            }
        }
    }

    /// The rest of `reader` as a `CallStart` in canonical form, or nil.
    private static func readCallStart(_ reader: inout Reader, strings: inout StringCache) -> WireV1.CallStart? {
        var start = WireV1.CallStart()
        if reader.peek() == methodTag {
            reader.skip()
            guard let count = reader.length(), count > 0, let method = reader.asciiText(count, cache: &strings)
            else { return nil }
            start.method = method
        }
        while reader.peek() == metadataTag {
            reader.skip()
            guard let count = reader.length() else { return nil }
            let end = reader.index + count
            var entry = WireV1.MetadataEntry()
            if reader.index < end, reader.peek() == keyTag {
                reader.skip()
                guard let count = reader.length(), count > 0, reader.index + count <= end,
                    let key = reader.asciiText(count, cache: &strings)
                else { return nil }
                entry.key = key
            }
            if reader.index < end, let tag = reader.peek(), tag == textTag || tag == binaryTag {
                reader.skip()
                guard let count = reader.length(), reader.index + count <= end else { return nil }
                if tag == textTag {
                    guard let text = reader.asciiText(count) else { return nil }
                    entry.value = .text(text)
                } else {
                    entry.value = .binary(reader.data(count))
                }
            }
            guard reader.index == end else { return nil }
            start.metadata.append(entry)
        }
        if reader.peek() == timeoutTag {
            reader.skip()
            guard let timeout = reader.varint() else { return nil }
            start.timeoutMicros = timeout
        }
        guard reader.remaining == 0 else { return nil }
        return start
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        var remaining: Int { bytes.count - index }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skip() { index += 1 }

        mutating func byte() -> UInt8? {
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        /// A varint of at most 10 bytes, as protobuf accepts it (non-minimal forms included).
        mutating func varint() -> UInt64? {
            ProtoVarint.read(bytes, at: &index, end: bytes.count)
        }

        /// The next `count` bytes as text when they are plain ASCII without NUL; other text is left to the generic
        /// codec's own string handling.
        mutating func asciiText(_ count: Int) -> String? {
            asciiBytes(count).map { String(decoding: $0, as: UTF8.self) }
        }

        mutating func asciiText(_ count: Int, cache: inout StringCache) -> String? {
            asciiBytes(count).map { cache.string($0) }
        }

        /// Takes the next `count` bytes when they are plain ASCII without NUL.
        private mutating func asciiBytes(_ count: Int) -> UnsafeBufferPointer<UInt8>? {
            let text = UnsafeBufferPointer(rebasing: bytes[index..<index + count])
            guard text.allSatisfy({ $0 != 0 && $0 < 0x80 }) else { return nil }
            index += count
            return text
        }

        mutating func data(_ count: Int) -> Data {
            defer { index += count }
            return Data(UnsafeBufferPointer(rebasing: bytes[index..<index + count]))
        }

        /// A length that fits in what is left.
        mutating func length() -> Int? {
            guard let value = varint(), value <= UInt64(remaining) else { return nil }
            return Int(value)
        }
    }
}
