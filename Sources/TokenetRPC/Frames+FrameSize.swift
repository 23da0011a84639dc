import TokenetWire

/// The frames whose words (a status message, a goaway or cancel reason) can be as long as whatever produced them
/// — a handler's error, an application's cancel reason — are cut to fit the peer's `max_frame_size` as they are
/// sent: a frame the peer cannot take would end the whole connection there. For the same reason a NUL in them,
/// which protobuf-c cannot encode in a string, is written as the two characters `\0`: an error message that
/// quotes a peer's input (a key id, a reference) would otherwise fail to encode and end the connection.
enum FrameFitting {
    /// Bytes of a frame around its one string (and the status's details and trailers), at most: the frame's stream
    /// id and kind (tag and length), a code or a stream id, and the string's tag and length.
    static let frameOverhead = 32

    /// What the note on a goaway or cancel reason cut to fit the peer's frames says.
    static let reasonCutShortNote = " (cut short: the reason exceeded the peer's max_frame_size)"

    /// `text` with each NUL written as `\0`; `text` itself when it has none (nearly always).
    static func withoutNUL(_ text: String) -> String {
        guard text.utf8.contains(0) else { return text }
        return text.replacing("\u{0}", with: "\\0")
    }

    /// `text` with as many of its leading Unicode scalars as fit in `budget` UTF-8 bytes, then `note`.
    static func cut(_ text: String, toUTF8Count budget: Int, note: String) -> String {
        let budget = budget - note.utf8.count
        var kept = String.UnicodeScalarView()
        var used = 0
        for scalar in text.unicodeScalars {
            let width = UTF8.width(scalar)
            guard used + width <= budget else { break }
            used += width
            kept.append(scalar)
        }
        return String(kept) + note
    }
}

extension WireV1.Status {
    /// Bytes of a status frame around the status's own strings and bytes, at most.
    static let frameOverhead = FrameFitting.frameOverhead

    /// What the note on a status cut to fit the peer's frames says.
    static let cutShortNote = " (cut short: the status exceeded the peer's max_frame_size)"

    /// An upper bound on the size of a frame that carries this status: counted without serializing it, so that the
    /// statuses that fit (nearly all) cost no more than a sum.
    var frameSizeBound: Int {
        var size = Self.frameOverhead + message.utf8.count
        for detail in details { size += 18 + detail.type.utf8.count + detail.value.count }
        for entry in trailers { size += entry.encodedSizeBound }
        return size
    }

    /// This status as it fits in a frame of at most `limit` bytes (the peer's `max_frame_size`, at least
    /// `ConnectionSettings.minimumMaxFrameSize`). A status that fits is returned as it is. One that does not would
    /// be refused by the peer, with the whole connection: it keeps its code, loses its details and trailers, and
    /// keeps as much of its message as fits, with a note saying it was cut.
    ///
    /// A status over `FrameFormat.maximumCallStartSize` bytes whose details and trailers would make more fields
    /// than `FrameFormat.maximumLargeFrameFields` loses them too, whole message kept: the peer refuses such a frame.
    func fitting(inFrameOf limit: Int) -> WireV1.Status {
        if message.utf8.contains(0) {
            var status = self
            status.message = FrameFitting.withoutNUL(message)
            return status.fitting(inFrameOf: limit)
        }
        let size = frameSizeBound
        // The frame's stream id and kind, the code and message; each detail and trailer is a field and two inside.
        let fields = 4 + 3 * (details.count + trailers.count)
        if size <= limit, size > FrameFormat.maximumCallStartSize, fields > FrameFormat.maximumLargeFrameFields {
            return WireV1.Status(code: code, message: message)
        }
        guard size > limit else { return self }
        let message = FrameFitting.cut(message, toUTF8Count: limit - Self.frameOverhead, note: Self.cutShortNote)
        return WireV1.Status(code: code, message: message)
    }
}

/// A frame whose one string is a reason (goaway, cancel): cut to fit like a status's message, keeping the rest.
protocol ReasonFrame {
    var reason: String { get set }
}

extension ReasonFrame {
    /// This frame as it fits in a frame of at most `limit` bytes: as much of its reason as fits, with a note saying
    /// it was cut; its other fields (a goaway's code and last stream id) stay.
    func fitting(inFrameOf limit: Int) -> Self {
        var frame = self
        frame.reason = FrameFitting.withoutNUL(reason)
        guard FrameFitting.frameOverhead + frame.reason.utf8.count > limit else { return frame }
        frame.reason = FrameFitting.cut(
            frame.reason, toUTF8Count: limit - FrameFitting.frameOverhead, note: FrameFitting.reasonCutShortNote)
        return frame
    }
}

extension WireV1.GoAway: ReasonFrame {}
extension WireV1.Cancel: ReasonFrame {}
