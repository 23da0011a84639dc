import TokenetWire

extension WireV1.Status {
    /// Bytes of a status frame around the status's own strings and bytes, at most: the frame's stream id and kind
    /// (tag and length), the code, and the message's tag and length.
    static let frameOverhead = 32

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
    func fitting(inFrameOf limit: Int) -> WireV1.Status {
        guard frameSizeBound > limit else { return self }
        let budget = limit - Self.frameOverhead - Self.cutShortNote.utf8.count
        var kept = String.UnicodeScalarView()
        var used = 0
        for scalar in message.unicodeScalars {
            let width = UTF8.width(scalar)
            guard used + width <= budget else { break }
            used += width
            kept.append(scalar)
        }
        return WireV1.Status(code: code, message: String(kept) + Self.cutShortNote)
    }
}
