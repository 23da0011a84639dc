import Foundation

/// The three frames every call carries — a message, the end of the requests, a status without details or
/// trailers — written and read by hand, byte for byte as the generated protobuf-c codec writes them.
///
/// A unary call is five frames, and going through the generic codec costs each of them a C struct tree built in an
/// arena, a descriptor-driven pack or unpack and a malloc'd copy of the message bytes: about a fifth of the CPU time
/// of a small call. These three shapes are simple enough to write directly:
///
///     Frame   { 1: stream_id (varint, omitted when 0); 4: Message | 5: HalfClose | 6: Status }
///     Message { 1: data (bytes, omitted when empty) }
///     Status  { 1: code (varint, omitted when OK); 2: message (string, omitted when empty) }
///
/// `Protos/tokenet/wire/v1/frame.proto` stays the definition: the encoder produces exactly the bytes
/// `appendSerializedBytes` produces (`FrameFastPathTests` compares them over many frames), and the decoder accepts
/// only that canonical form. Anything else — other kinds, other field orders, unknown fields, a string the generic
/// codec would treat differently — returns nil/false and takes the generic path, so both paths agree on every input.
enum FrameFastPath {
    // Tags: field number << 3 | wire type.
    private static let streamIDTag: UInt8 = 0x08  // 1, varint
    private static let messageTag: UInt8 = 0x22  // 4, length-delimited
    private static let halfCloseTag: UInt8 = 0x2A  // 5, length-delimited
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
            let count = message.data.count
            let body = count == 0 ? 0 : 1 + varintSize(UInt64(count)) + count
            buffer.reserveCapacity(buffer.count + 16 + body)
            appendStreamID(frame.streamID, to: &buffer)
            buffer.append(messageTag)
            appendVarint(UInt64(body), to: &buffer)
            if count > 0 {
                buffer.append(dataTag)
                appendVarint(UInt64(count), to: &buffer)
                message.data.withUnsafeBytes { buffer.append(contentsOf: $0.bindMemory(to: UInt8.self)) }
            }
            return true
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
            guard !text.contains(0) else { return false }
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

    /// The frame in `bytes` (one frame's body, without the length prefix) when it is in the canonical form of one of
    /// the three shapes; nil otherwise, for the generic decoder to read (or reject).
    static func decode(_ bytes: ArraySlice<UInt8>) -> WireV1.Frame? {
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
            case messageTag:
                if length == 0 { return WireV1.Frame(streamID: streamID, kind: .message(WireV1.Message())) }
                guard reader.byte() == dataTag, let count = reader.length(), count > 0, reader.remaining == count
                else { return nil }
                let data = Data(UnsafeBufferPointer(rebasing: body[reader.index...]))
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
                    let text = UnsafeBufferPointer(rebasing: body[reader.index...])
                    // Plain ASCII only: other text goes through the generic codec's own string handling.
                    guard text.allSatisfy({ $0 != 0 && $0 < 0x80 }) else { return nil }
                    status.message = String(decoding: text, as: UTF8.self)
                    reader.index = body.count
                }
                guard reader.remaining == 0 else { return nil }
                return WireV1.Frame(streamID: streamID, kind: .status(status))
            default:
                return nil
            }
        }
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
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }

        /// A length that fits in what is left.
        mutating func length() -> Int? {
            guard let value = varint(), value <= UInt64(remaining) else { return nil }
            return Int(value)
        }
    }
}
