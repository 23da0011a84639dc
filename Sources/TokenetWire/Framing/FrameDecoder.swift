import Foundation

/// Reads frames in the Tokenet framing out of a byte stream that arrives in arbitrary chunks.
///
/// A pure state machine with no I/O, so the transport driver owns sockets and this type owns the rules:
///
///     decoder.feed(bytesJustRead)            // never throws; a problem is reported by `nextFrame()`
///     while let frame = try decoder.nextFrame() { handle(frame) }
///     // on end of stream:
///     try decoder.finish()                   // throws `.truncatedFrame` if a frame was cut off
///
/// Every length prefix is checked against `maximumFrameSize` inside `feed` the moment its fourth byte arrives, and the
/// bytes of an oversized frame are never buffered, so a driver that pulls frames after each chunk never holds more
/// than one chunk plus one partial frame of legal size. The rejection is reported by `nextFrame()` once the complete frames in front of it have been
/// pulled, so every frame the peer sent before the violation is still seen in order, whatever the chunking.
///
/// After any error the decoder stays failed: every later `nextFrame()` and `finish()` throws the same error and fed
/// bytes are dropped, because the connection is about to be closed. One error leaves it healthy: a well-formed frame
/// on a call's stream that holds a value Tokenet cannot read (a string with a NUL character, or one that is not
/// UTF-8) is skipped, and the error names its stream (`WireError.streamID`), so that only that call is refused.
public struct FrameDecoder: Sendable {
    /// The largest frame (the N of the length prefix) this side accepts; it announces it in its `Hello`.
    public let maximumFrameSize: Int

    /// Where the decoder stands; the byte bookkeeping below applies while it is `.reading` or `.rejecting`.
    private enum State: Sendable {
        /// Accepting bytes and returning frames.
        case reading
        /// An oversized prefix was found at `scanIndex` (then equal to `buffer.count`) and its bytes were dropped;
        /// the frames in front of it can still be pulled, after which `nextFrame()` reports the error.
        case rejecting(WireError)
        /// An error was reported; the decoder only ever reports it again.
        case failed(WireError)
    }

    private var state = State.reading

    /// Received bytes not yet returned as frames are `buffer[readIndex...]`; they start at a length prefix.
    ///
    /// The array is reused: consumed bytes are dropped by moving the (shorter) rest to the front only when that
    /// costs no more than the bytes already consumed, which keeps the total copying linear in the stream.
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Index in `buffer` of the next length prefix not yet checked against the maximum. Every prefix before it has
    /// been checked. It lies beyond `buffer.count` while the body of the last checked frame is still arriving.
    private var scanIndex = 0
    /// Whether `buffer` is an array the caller fed (and may still hold), taken over instead of copied.
    private var adopted = false
    /// A fed array queued behind `buffer`, which then holds only complete frames: its bytes from `pendingStart`
    /// on are next, and every prefix in them up to `pendingScanIndex` has been checked. `buffer` becomes this
    /// array once its own frames are pulled, so neither is copied.
    private var pending: [UInt8]?
    private var pendingStart = 0
    private var pendingScanIndex = 0
    /// Whether a length prefix has passed the check: an oversized first one may be another protocol's bytes.
    private var checkedAPrefix = false
    /// Method names and metadata keys this connection sent before, reused instead of allocated again.
    private var strings = FrameFastPath.StringCache()

    /// - Parameter maximumFrameSize: the largest frame accepted; values above `UInt32.max` act as `UInt32.max`.
    public init(maximumFrameSize: Int = FrameFormat.defaultMaximumFrameSize) {
        precondition(maximumFrameSize >= 0, "a maximum frame size cannot be negative")
        self.maximumFrameSize = min(maximumFrameSize, FrameFormat.largestExpressibleFrameSize)
    }

    /// Bytes received and held but not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - readIndex + (pending.map { $0.count - pendingStart } ?? 0) }

    /// The error the decoder reported, after which it stays failed; nil while it is healthy.
    public var failure: WireError? {
        if case .failed(let error) = state { error } else { nil }
    }

    /// Adds bytes read from the stream. They may split frames and prefixes anywhere.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        bytes.withMemoryRebound(to: UInt8.self) { feed(contiguous: $0) }
    }

    /// Adds bytes read from the stream. They may split frames and prefixes anywhere.
    ///
    /// The decoder keeps `bytes` itself (the caller's array, not a copy) and parses the frames in it in place. Only
    /// a frame that straddles two chunks is copied: its start when the chunk ends, and the head of the next chunk
    /// up to the frame's end; the rest of that next chunk is again kept as it is.
    public mutating func feed(_ bytes: [UInt8]) {
        guard case .reading = state, !bytes.isEmpty else { return }
        guard pending == nil else {
            bytes.withUnsafeBufferPointer { feed(contiguous: $0) }
            return
        }
        if buffer.isEmpty {
            adopt(bytes, from: 0)
            return
        }
        // Complete the prefix, then the body, of the frame that is partly buffered, from the head of `bytes`.
        var offset = 0
        while offset < bytes.count, case .reading = state, scanIndex != buffer.count {
            let missing =
                scanIndex > buffer.count
                ? scanIndex - buffer.count : FrameFormat.lengthPrefixSize - (buffer.count - scanIndex)
            isolateUnpulledBytes(reserving: max(scanIndex, buffer.count + missing) - readIndex)
            let end = min(bytes.count, offset + missing)
            bytes.withUnsafeBufferPointer { feed(contiguous: UnsafeBufferPointer(rebasing: $0[offset..<end])) }
            offset = end
        }
        guard offset < bytes.count, case .reading = state else { return }
        // The buffered frames are complete: the rest of `bytes` is read once they have been pulled.
        adopt(bytes, from: offset)
    }

    /// Adds bytes read from the stream. They may split frames and prefixes anywhere.
    public mutating func feed<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let fed: Void? = bytes.withContiguousStorageIfAvailable { feed(contiguous: $0) }
        if fed == nil {
            Array(bytes).withUnsafeBufferPointer { feed(contiguous: $0) }
        }
    }

    /// The next complete frame, or nil when more bytes are needed.
    ///
    /// - Throws: `WireError.frameTooLarge` when the next prefix exceeds `maximumFrameSize`,
    ///   `WireError.invalidMessage` when a frame's bytes are not a `WireV1.Frame`, `WireError.unreadableValue` for a
    ///   frame that is one but holds a value Tokenet cannot read, or the earlier error. An `unreadableValue` error
    ///   with a `streamID` leaves the decoder healthy: the frame was skipped and the next call returns the next one.
    public mutating func nextFrame() throws -> WireV1.Frame? {
        if case .failed(let error) = state { throw error }
        if readIndex == buffer.count, pending != nil { takePending() }
        let available = buffer.count - readIndex
        guard available >= FrameFormat.lengthPrefixSize else {
            if available == 0, case .rejecting(let error) = state { throw fail(error) }
            return nil
        }
        let length = lengthPrefix(at: readIndex)
        guard available - FrameFormat.lengthPrefixSize >= length else { return nil }
        let start = readIndex + FrameFormat.lengthPrefixSize
        let end = start + length
        // A stream id wider than 32 bits fails the connection, as the generic decoder's path below does: cut to its
        // low bits, the refusal went to another call (stream 2^32 + 5 to 5).
        if length > FrameFormat.maximumCallStartSize, let wide = Self.wideStreamID(buffer[start..<end], length) {
            throw fail(wide)
        }
        // Only a frame larger than the limit can hold a call_start over it: the check costs small frames nothing.
        if length > FrameFormat.maximumCallStartSize {
            if let (streamID, size) = Self.oversizedCallStart(in: buffer[start..<end]) {
                // On stream 0 it opens no call, so there is no call to refuse: the connection's error, found unread.
                guard streamID != 0 else {
                    throw fail(
                        WireError(
                            .invalidMessage,
                            "a frame of \(length) bytes could not be read: its call_start of \(size) bytes is on "
                                + "stream 0, which no call may use"))
                }
                consume(through: end)
                throw WireError(
                    .callStartTooLarge,
                    "call_start of \(size) bytes: the method, metadata and timeout of a call may take at most "
                        + "\(FrameFormat.maximumCallStartSize) bytes",
                    streamID: streamID, opensCall: true)
            }
            let limit = FrameFormat.maximumLargeFrameFields
            if Self.holdsMoreFields(than: limit, in: buffer[start..<end]) {
                throw fail(
                    WireError(
                        .invalidMessage,
                        "a frame of \(length) bytes holds more than \(limit) fields (each metadata entry, status "
                            + "detail and unknown field counts): a frame over "
                            + "\(FrameFormat.maximumCallStartSize) bytes may hold at most \(limit)"))
            }
        }
        let frame: WireV1.Frame
        do {
            // An ArraySlice shares the buffer's storage: the body is parsed in place, not copied. (It lives only in
            // this block: a slice still held when the buffer is emptied below would make that a copy.)
            let body = buffer[start..<end]
            if let fast = FrameFastPath.decode(body, strings: &strings, storageByteCount: buffer.capacity) {
                frame = fast
            } else {
                frame = try WireV1.Frame(serializedBytes: body)
                if let wide = Self.streamIDAbove32Bits(in: body) {
                    throw WireError(.invalidMessage, "its stream id \(wide) is above 2^32 - 1")
                }
            }
        } catch {
            let wireError = error as? WireError
            let reason = wireError?.message ?? "\(error)"
            if wireError?.code == .unreadableValue {
                if let wide = Self.wideStreamID(buffer[start..<end], length) { throw fail(wide) }
                // Well-formed: only its call is concerned, when it belongs to one (stream 0 is the connection's).
                let fields = Self.topLevelFields(of: buffer[start..<end])
                if fields.streamID != 0 {
                    consume(through: end)
                    throw WireError(
                        .unreadableValue, reason, streamID: fields.streamID, opensCall: fields.callStartSize != nil)
                }
            }
            throw fail(
                WireError(wireError?.code ?? .invalidMessage, "a frame of \(length) bytes could not be read: \(reason)")
            )
        }
        consume(through: end)
        return frame
    }

    /// Marks the bytes up to `end` (the end of the frame just read) as pulled.
    private mutating func consume(through end: Int) {
        readIndex = end
        if readIndex == buffer.count {
            if adopted {
                // The caller's array: dropping it is free, emptying it in place would allocate a copy.
                buffer = []
                adopted = false
            } else {
                buffer.removeAll(keepingCapacity: true)
            }
            scanIndex -= readIndex
            readIndex = 0
        }
    }

    /// The stream id and the size of a frame's `call_start` (field 3) when it is larger than
    /// `FrameFormat.maximumCallStartSize`; nil otherwise, or when the top level cannot be followed (the generic
    /// decoder then reports what is wrong).
    static func oversizedCallStart(in body: ArraySlice<UInt8>) -> (streamID: UInt32, size: Int)? {
        let fields = topLevelFields(of: body)
        guard fields.complete, let size = fields.callStartSize, size > FrameFormat.maximumCallStartSize else {
            return nil
        }
        return (fields.streamID, size)
    }

    /// Walks a frame's top-level fields without decoding them: its stream id (the last occurrence counts, as for
    /// any protobuf scalar) as sent, the length of its call_start, and whether the walk reached the end (false when
    /// it stopped at something it cannot follow).
    private static func topLevelFields(
        of body: ArraySlice<UInt8>
    ) -> (streamID: UInt32, sentStreamID: UInt64, callStartSize: Int?, complete: Bool) {
        body.withUnsafeBufferPointer { bytes in
            var index = 0
            var sent: UInt64 = 0
            var callStartSize: Int?
            let end = bytes.count
            // A uint32 keeps the low 32 bits of a wider varint, as protobuf-c reads it.
            func fields(complete: Bool) -> (UInt32, UInt64, Int?, Bool) {
                (UInt32(truncatingIfNeeded: sent), sent, callStartSize, complete)
            }
            while index < end {
                guard let key = ProtoVarint.read(bytes, at: &index, end: end) else { return fields(complete: false) }
                switch key & 7 {
                case 0:
                    guard let value = ProtoVarint.read(bytes, at: &index, end: end) else {
                        return fields(complete: false)
                    }
                    if key >> 3 == 1 { sent = value }
                case 1, 5:
                    let size = key & 7 == 1 ? 8 : 4
                    guard end - index >= size else { return fields(complete: false) }
                    index += size
                case 2:
                    guard let length = ProtoVarint.read(bytes, at: &index, end: end), length <= UInt64(end - index)
                    else { return fields(complete: false) }
                    // Repeated occurrences of a message field merge into one: a call_start sent in pieces is their sum.
                    if key >> 3 == 3 { callStartSize = (callStartSize ?? 0) + Int(length) }
                    index += Int(length)
                default:
                    return fields(complete: false)
                }
            }
            return fields(complete: true)
        }
    }

    /// The refusal of a frame of `length` bytes whose stream id does not fit in 32 bits; nil when it fits. (A static
    /// function, not a closure in `nextFrame`: a closure there cost an allocation on every frame.)
    private static func wideStreamID(_ body: ArraySlice<UInt8>, _ length: Int) -> WireError? {
        streamIDAbove32Bits(in: body).map {
            WireError(
                .invalidMessage, "a frame of \(length) bytes could not be read: its stream id \($0) is above 2^32 - 1")
        }
    }

    /// The stream id of a frame that protobuf-c read when it does not fit in 32 bits: protobuf-c keeps its low 32
    /// bits, which made a frame sent for stream 2^40 one of the connection's own (stream 0), or another call's.
    /// Only the frames the fast path declines are walked for it (the fast path refuses such an id itself).
    static func streamIDAbove32Bits(in body: ArraySlice<UInt8>) -> UInt64? {
        let fields = topLevelFields(of: body)
        return fields.sentStreamID > UInt64(UInt32.max) ? fields.sentStreamID : nil
    }

    /// Declares the end of the stream; call it after `nextFrame()` returned nil.
    ///
    /// - Throws: `WireError.truncatedFrame` when the stream stopped inside a length prefix or a frame body (the peer
    ///   closed mid-frame), `WireError.frameTooLarge` for an oversized prefix not yet reported, or the earlier error.
    public mutating func finish() throws {
        absorbPending()
        switch state {
        case .reading: break
        case .rejecting(let error): throw fail(error)
        case .failed(let error): throw error
        }
        var index = readIndex
        var length = 0
        while buffer.count - index >= FrameFormat.lengthPrefixSize {
            length = lengthPrefix(at: index)
            let next = index + FrameFormat.lengthPrefixSize + length
            guard next <= buffer.count else { break }
            index = next
        }
        let remainder = buffer.count - index
        if remainder == 0 { return }
        if remainder < FrameFormat.lengthPrefixSize {
            throw fail(
                WireError(
                    .truncatedFrame,
                    "the stream ended inside a length prefix: \(remainder) of its "
                        + "\(FrameFormat.lengthPrefixSize) bytes arrived"
                )
            )
        }
        let body = remainder - FrameFormat.lengthPrefixSize
        throw fail(
            WireError(.truncatedFrame, "the stream ended inside a frame: \(body) of its \(length) bytes arrived")
        )
    }

    // MARK: - Internals

    private mutating func feed(contiguous chunk: UnsafeBufferPointer<UInt8>) {
        guard case .reading = state, !chunk.isEmpty else { return }
        absorbPending()
        adopted = false  // the appends below make the buffer this decoder's own
        compactIfCheap()
        let buffered = buffer.count
        let total = buffered + chunk.count
        var accepted = chunk.count
        // Walk the frame boundaries that the new bytes reach, so an oversized prefix is refused before its body
        // is stored. Only the prefixes are read: this costs a few loads per frame, not per byte.
        while total - scanIndex >= FrameFormat.lengthPrefixSize {
            let length = lengthPrefix(at: scanIndex, continuedBy: chunk)
            guard length <= maximumFrameSize else {
                state = .rejecting(tooLarge(length))
                if scanIndex < buffered {
                    // The first bytes of the bad prefix were already buffered: drop them too.
                    buffer.removeSubrange(scanIndex...)
                    accepted = 0
                } else {
                    accepted = scanIndex - buffered
                }
                break
            }
            scanIndex += FrameFormat.lengthPrefixSize + length
            checkedAPrefix = true
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[..<accepted]))
    }

    /// Makes `bytes[start...]` the unpulled bytes (nothing else may be buffered), checking its prefixes. An
    /// oversized one ends what is kept: the frames in front of it are still returned, then the error.
    private mutating func adopt(_ bytes: [UInt8], from start: Int) {
        var scan = start
        var kept = bytes
        while kept.count - scan >= FrameFormat.lengthPrefixSize {
            let length = Self.lengthPrefix(in: kept, at: scan)
            guard length <= maximumFrameSize else {
                state = .rejecting(tooLarge(length))
                kept.removeSubrange(scan...)
                break
            }
            scan += FrameFormat.lengthPrefixSize + length
            checkedAPrefix = true
        }
        if buffer.isEmpty {
            buffer = kept
            adopted = true
            readIndex = start
            scanIndex = scan
        } else if kept.count > start {
            pending = kept
            pendingStart = start
            pendingScanIndex = scan
        }
    }

    /// Moves to the queued array once the frames before it have been pulled.
    private mutating func takePending() {
        guard let next = pending else { return }
        pending = nil
        takePending(next)
    }

    /// Appends the queued array's bytes to `buffer` (a caller feeding again before pulling frames, or ending).
    private mutating func absorbPending() {
        guard let next = pending else { return }
        pending = nil
        if readIndex == buffer.count {
            takePending(next)
            return
        }
        let shift = buffer.count - pendingStart
        buffer.append(contentsOf: next[pendingStart...])
        adopted = false
        scanIndex = pendingScanIndex + shift
    }

    private mutating func takePending(_ next: [UInt8]) {
        buffer = next
        adopted = true
        readIndex = pendingStart
        scanIndex = pendingScanIndex
    }

    /// Gives the unpulled bytes an array of their own with room for `capacity` bytes, so that completing a frame
    /// that straddles two chunks copies each of its bytes once, and never the caller's whole array.
    private mutating func isolateUnpulledBytes(reserving capacity: Int) {
        if !adopted && readIndex == 0 {
            buffer.reserveCapacity(capacity)
            return
        }
        var own: [UInt8] = []
        own.reserveCapacity(max(capacity, buffer.count - readIndex))
        own.append(contentsOf: buffer[readIndex...])
        buffer = own
        scanIndex -= readIndex
        readIndex = 0
        adopted = false
    }

    private static func lengthPrefix(in bytes: [UInt8], at index: Int) -> Int {
        Int(bytes[index]) << 24 | Int(bytes[index + 1]) << 16 | Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
    }

    private func tooLarge(_ length: Int) -> WireError {
        if !checkedAPrefix, let foreign = Self.foreignProtocol(openingWith: length) { return foreign }
        return WireError(
            .frameTooLarge,
            "a frame of \(length) bytes exceeds the maximum frame size of \(maximumFrameSize) bytes"
        )
    }

    /// Names the protocol whose first four bytes (here read as a length prefix) opened the stream, when they are
    /// recognisably HTTP or a TLS record: "a frame of 1195725856 bytes" helps nobody who pointed a browser, curl,
    /// or a TLS client at a plaintext port (or a plaintext client at a TLS one, which answers with an alert).
    static func foreignProtocol(openingWith prefix: Int) -> WireError? {
        let bytes = [
            UInt8(prefix >> 24 & 0xFF), UInt8(prefix >> 16 & 0xFF), UInt8(prefix >> 8 & 0xFF), UInt8(prefix & 0xFF),
        ]
        if (0x14...0x17).contains(bytes[0]) && bytes[1] == 0x03 && bytes[2] <= 0x04 {
            return WireError(
                .foreignProtocol,
                "the peer sent a TLS record, not a Tokenet frame: one side uses TLS and the other plaintext "
                    + "(--plaintext must be given to both or neither)")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let httpOpenings = ["GET ", "POST", "PUT ", "HEAD", "DELE", "OPTI", "PATC", "CONN", "TRAC", "PRI ", "HTTP"]
        // "HTTP" opens an HTTP server's answer, which only a client reads: the tokenet CLI itself, pointed at a web
        // server. The advice to use the CLI was for a browser or curl pointed at a node.
        if text == "HTTP" {
            return WireError(
                .foreignProtocol,
                "the peer answered with HTTP (\"HTTP...\"), not a Tokenet frame: the address is an HTTP server, not a "
                    + "Tokenet node; check its host and port")
        }
        if httpOpenings.contains(text) {
            return WireError(
                .foreignProtocol,
                "the peer sent HTTP (\"\(text)...\"), not a Tokenet frame: Tokenet speaks length-prefixed protobuf "
                    + "frames; use the tokenet CLI (tokenet list, describe, call)")
        }
        // Four characters of text (an HTML page, an SSH or SMTP banner) read as a length are at least 512 MiB,
        // above any frame size limit, so no real frame is ever taken for text.
        if bytes.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            return WireError(
                .foreignProtocol,
                "the peer sent text (\"\(text.debugDescription.dropFirst().dropLast())...\"), not a Tokenet frame: "
                    + "the peer does not speak Tokenet")
        }
        return nil
    }

    /// Drops consumed bytes when the move costs no more than the bytes they replace (amortised linear copying).
    private mutating func compactIfCheap() {
        guard readIndex > 0, buffer.count - readIndex <= readIndex else { return }
        buffer.removeSubrange(..<readIndex)
        scanIndex -= readIndex
        readIndex = 0
    }

    /// Enters the failed state, releasing the buffer, and returns the error to throw.
    private mutating func fail(_ error: WireError) -> WireError {
        state = .failed(error)
        buffer = []
        adopted = false
        pending = nil
        readIndex = 0
        scanIndex = 0
        return error
    }

    private func lengthPrefix(at index: Int) -> Int {
        Int(buffer[index]) << 24 | Int(buffer[index + 1]) << 16 | Int(buffer[index + 2]) << 8 | Int(buffer[index + 3])
    }

    /// The prefix at `index` of the buffered bytes followed by `chunk` (the prefix may straddle the two).
    private func lengthPrefix(at index: Int, continuedBy chunk: UnsafeBufferPointer<UInt8>) -> Int {
        let buffered = buffer.count
        if index >= buffered {
            let offset = index - buffered
            return Int(chunk[offset]) << 24 | Int(chunk[offset + 1]) << 16 | Int(chunk[offset + 2]) << 8
                | Int(chunk[offset + 3])
        }
        var length = 0
        for position in index..<(index + FrameFormat.lengthPrefixSize) {
            let byte = position < buffered ? buffer[position] : chunk[position - buffered]
            length = length << 8 | Int(byte)
        }
        return length
    }
}
