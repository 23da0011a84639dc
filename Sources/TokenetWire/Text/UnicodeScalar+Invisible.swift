extension Unicode.Scalar {
    /// Whether text shown to a person writes this scalar as an escape rather than as itself: a control character
    /// (C0, DEL, C1), which a terminal acts on, or one it does not show — a format character (a zero-width space, a
    /// bidirectional override or isolate, a soft hyphen, a byte-order mark) or a line or paragraph separator. Either
    /// kind could hide what a line says from the person reading it: a peer's text could clear the screen, reorder
    /// the characters of a method name or a merchant, or split a card number where nobody sees the split. Node logs,
    /// the CLI's text and the JSON it prints all escape the same set.
    public var isInvisibleInText: Bool {
        value < 0x20 || (0x7F...0x9F).contains(value) || properties.generalCategory == .format
            || self == "\u{2028}" || self == "\u{2029}"
    }
}
