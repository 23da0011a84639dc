/// Whether `text` shows `digits` (a one-time code, a PIN) as a number of its own: not inside a longer run of digits
/// or letters. Random values in logs hold any short run of digits now and then (a Visa token id's 26 random digits
/// hold a given 6-digit code about once in 50,000 ids, a trace id a given 4 digits once in 8,000), so a check that a
/// code is not logged looks for it where it would stand as a value.
public func mentionsAsNumber(_ text: String, _ digits: String) -> Bool {
    guard !digits.isEmpty else { return false }
    let characters = Array(text.utf8)
    let wanted = Array(digits.utf8)
    guard characters.count >= wanted.count else { return false }
    func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
    }
    for start in 0...(characters.count - wanted.count)
    where characters[start..<(start + wanted.count)].elementsEqual(wanted) {
        let before = start > 0 ? characters[start - 1] : nil
        let after = start + wanted.count < characters.count ? characters[start + wanted.count] : nil
        if !(before.map(isAlphanumeric) ?? false) && !(after.map(isAlphanumeric) ?? false) { return true }
    }
    return false
}
