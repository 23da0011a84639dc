import TokenetWire

extension WireV1.MetadataEntry {
    /// At least the encoded size of this entry inside its message: its key and value, plus the most the entry's own
    /// tag and length, its key's and its value's can take (6 bytes each). Cheaper than encoding it, for checks
    /// against frame limits of at least 16 KiB (`call_start` metadata, status trailers).
    var encodedSizeBound: Int {
        let valueSize: Int
        switch value {
        case .text(let text)?: valueSize = text.utf8.count
        case .binary(let bytes)?: valueSize = bytes.count
        case nil: valueSize = 0
        }
        return 18 + key.utf8.count + valueSize
    }
}
