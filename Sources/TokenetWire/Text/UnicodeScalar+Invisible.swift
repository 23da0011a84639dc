extension Unicode.Scalar {
    /// Whether text shown to a person writes this scalar as an escape rather than as itself: a control character
    /// (C0, DEL, C1), which a terminal acts on, or one it does not show — a format character (a zero-width space, a
    /// bidirectional override or isolate, a soft hyphen, a byte-order mark) or a line or paragraph separator. Either
    /// kind could hide what a line says from the person reading it: a peer's text could clear the screen, reorder
    /// the characters of a method name or a merchant, or split a card number where nobody sees the split. Node logs,
    /// the CLI's text and the JSON it prints all escape the same set.
    public var isInvisibleInText: Bool {
        // ASCII, most of any text, without the general category's table lookup: the JSON of a message of several
        // megabytes (base64 of its bytes) spent a sixth of `tokenet decode`'s time there.
        if value < 0x80 { return value < 0x20 || value == 0x7F }
        return value <= 0x9F || properties.generalCategory == .format || self == "\u{2028}" || self == "\u{2029}"
    }
}
