/// Masks anything that looks like a card number (PAN) so it can be written to a log.
///
/// A run of 13 or more digits (PANs are 13–19 digits) keeps only its last four digits visible. A single space,
/// hyphen, dot, underscore, tab or line break between digit groups counts as part of the run, so
/// `4111 1111 1111 1111`, `4111-1111-1111-1111` and `4111.1111.1111.1111` are masked too: a PAN reaches a log through
/// whatever a caller typed or pasted (an unknown push session id is echoed in its error), not only in its usual
/// forms. Runs longer than 19 digits are masked as well: a PAN glued to other digits must not leak either.
///
/// A PAN split by a slash, comma, colon, semicolon, pipe, plus, equals sign, quote, backslash, asterisk, tilde or any
/// other ASCII symbol (`#`, `@`, `!`, `$`, `%`, `&`, `?`, `^`, a backquote, brackets) (`4111/1111/1111/1111`,
/// `4111|1111|1111|1111`) is masked when consecutive groups look
/// like a card number's: 13–19 digits in all, in groups of at least three, whatever other groups come before or
/// after them (`4111/1111/1111/1111/12/29`). Those separators also join the parts of times,
/// dates, addresses and ports (`04:25:50`, `2026/11/30`, `127.0.0.1:7001`), whose short groups keep them readable.
/// So do gaps of two to four spaces, hyphens, dots, underscores, tabs or line breaks (`4111  1111  1111  1111`,
/// `4111 - 1111 - 1111 - 1111`, `\r\n`): numbers a few spaces apart in ordinary text (`1  2  3`, `10  200  3000`)
/// stay readable, and wider gaps, which lay out columns, join nothing. Such a gap with one or two of that
/// punctuation in it (`4111 / 1111`, `4111**1111`, `4111 */ 1111`) joins as the punctuation does; one with a comma,
/// semicolon or bar ends the run (`1000, 2000, 4000, 8000 ms`, `| 1000 | 2000 |`). Characters that look like that
/// punctuation (a division slash, a multiplication sign, an ideographic full stop) are punctuation too.
///
/// So a card number written as a list, `4111, 1111, 1111, 1111`, is not masked, on purpose: a list of four-digit
/// numbers is what logs hold far more often (ports `7001, 7002, 7003, 7004`, backoffs `1000, 2000, 4000, 8000`),
/// in exactly a card number's groups, and no check tells the two apart (a Luhn check digit passes one list in ten).
/// Nodes format no card number that way, and one typed or pasted comes with spaces, hyphens or no separator at all,
/// all of which are masked.
///
/// A run of exactly 13 digits standing alone (no separator joins it to other digits) that does not start with a 4
/// is left alone: 13-digit card numbers are Visa's, which start with a 4, and such a run is most often a time in
/// milliseconds (`1764647000000`), and runs of 14–19 digits are always masked. Joined to other digits, by any
/// separator, it is no part of a card number either, as no scheme's grouping has a group of 13 digits: a time and a
/// sequence number (`1764647000000:123`, `1764647000000-123`) stay readable, and the digits on either side of it
/// are looked at without it, so that a card number next to a time is masked (`1764647000000 4111111111111111`,
/// `1764647000000:4111:1111:1111:1111`, `1764647000000-4111-1111-1111-1111`).
///
/// A Visa token reference id (`DNITHE` and 26 digits) is left alone too: it names a token, not a card, and nodes
/// log it with every token event. So are the digits inside a hex identifier (a trace id, a key id, a digest), unless
/// some 13–19 of them in a row pass the Luhn check, as a card number written into one does.
///
/// An IPv4 address and its port (`192.168.178.100:7001`) is left alone although its groups are long enough: a node's
/// log names the addresses it listens on and calls, and `***.***.***.***:7001` names none.
///
/// Control and format characters count as separators too (`4111\u{7F}1111…`, a zero-width space between groups):
/// a log shows them as escapes or not at all, and the digits around them still read as one number. So do combining
/// marks written over the digits (the blocks of combining diacritics, of marks for symbols such as the keycap, and
/// the variation selectors).
///
/// Digits are any Unicode decimal digits, so a PAN typed in fullwidth digits (`４１１１…`) is masked as well; so are
/// separators, since a PAN typed or pasted with those digits comes with their spaces and hyphens (`４１１１　１１１１…`,
/// `４１１１－１１１１…`), and one copied from a formatted page with no-break spaces, dashes, minus signs, middle dots
/// or bullets between its groups.
/// Separators are kept, so the masked text still lines up with the original.
public func maskPAN(_ text: String) -> String {
    if text.utf8.allSatisfy({ $0 < 0x80 }) {
        let bytes = Array(text.utf8)
        let positions = PANRuns.maskedPositions(count: bytes.count) { Unicode.Scalar(bytes[$0]) }
        guard !positions.isEmpty else { return text }
        var output = bytes
        for position in positions { output[position] = UInt8(ascii: "*") }
        return String(decoding: output, as: UTF8.self)
    }
    let scalars = Array(text.unicodeScalars)
    let positions = PANRuns.maskedPositions(count: scalars.count) { scalars[$0] }
    guard !positions.isEmpty else { return text }
    var output = String.UnicodeScalarView()
    var remaining = positions.makeIterator()
    var next = remaining.next()
    for (index, scalar) in scalars.enumerated() {
        if index == next {
            output.append("*")
            next = remaining.next()
        } else {
            output.append(scalar)
        }
    }
    return String(output)
}

/// `bytes` read as UTF-8 text with every card number masked as `maskPAN` masks it, each byte of a masked digit
/// replaced by `*` (a fullwidth digit's three bytes by three), so that the bytes keep their length; a byte that is
/// no part of valid UTF-8 counts as a character that is neither a digit nor a separator. For bytes shown as they are
/// (base64 of a message whose type is not known), where a card number typed into one of its fields reads back.
public func maskPAN(utf8 bytes: [UInt8]) -> [UInt8] {
    var scalars: [Unicode.Scalar] = []
    var starts: [Int] = []
    scalars.reserveCapacity(bytes.count)
    starts.reserveCapacity(bytes.count)
    var index = 0
    while index < bytes.count {
        // ASCII as it is: validating each byte as a string of its own made masking a message of megabytes slow.
        if bytes[index] < 0x80 {
            scalars.append(Unicode.Scalar(bytes[index]))
            starts.append(index)
            index += 1
            continue
        }
        let length = bytes[index] >= 0xF0 ? 4 : bytes[index] >= 0xE0 ? 3 : 2
        if index + length <= bytes.count, bytes[index] >= 0xC2,
            let scalar = String(validating: bytes[index..<(index + length)], as: UTF8.self)?.unicodeScalars.first
        {
            scalars.append(scalar)
            starts.append(index)
            index += length
        } else {
            scalars.append("\u{FFFD}")
            starts.append(index)
            index += 1
        }
    }
    let positions = PANRuns.maskedPositions(count: scalars.count) { scalars[$0] }
    guard !positions.isEmpty else { return bytes }
    var masked = bytes
    for position in positions {
        let end = position + 1 < starts.count ? starts[position + 1] : bytes.count
        for byte in starts[position]..<end { masked[byte] = UInt8(ascii: "*") }
    }
    return masked
}

/// Whether `text` holds what reads as a card number: what `maskPAN` masks, but for a hex identifier (a digest, a
/// Mastercard token reference id), which is taken whole here even when some of its digits pass the Luhn check.
///
/// For text a node did not write (an operator's message, where a token's Mastercard id made of random hex digits
/// passes that check about once in a few hundred and was refused by chance). An identifier someone chooses is held
/// to the stricter `IdentifierRules.holdsCardNumber(identifier:)`.
public func holdsCardNumber(_ text: String) -> Bool {
    let scalars = Array(text.unicodeScalars)
    return !PANRuns.maskedPositions(count: scalars.count, hexIdentifiersWhole: true) { scalars[$0] }.isEmpty
}

/// The run finding behind `maskPAN`, over the characters of a text by position.
enum PANRuns {
    enum Kind {
        case digit
        /// A separator any digit groups may be joined by.
        case separator
        /// A full stop: a separator like the others, but also what joins the parts of an IPv4 address.
        case dot
        /// A separator that joins a PAN's groups only when they look like a card number's.
        case punctuation
        case other
    }

    static func kind(of scalar: Unicode.Scalar) -> Kind {
        // ASCII from a table: the switch below, run for every character of every line and message shown, was a
        // tenth of the time `tokenet decode` took for a message of several megabytes.
        if scalar.value < 0x80 { return asciiKinds[Int(scalar.value)] }
        return kindBeyondTable(of: scalar)
    }

    /// `kindBeyondTable(of:)` of each ASCII scalar.
    private static let asciiKinds: [Kind] = (0..<0x80).map { kindBeyondTable(of: Unicode.Scalar(UInt8($0))) }

    private static func kindBeyondTable(of scalar: Unicode.Scalar) -> Kind {
        switch scalar {
        case "0"..."9": .digit
        case ".": .dot
        case " ", "-", "_", "\t", "\n", "\r": .separator
        // A pipe, plus, equals, quote or backslash between groups (`4111|1111|…`) hides a card number no better; nor
        // do the other ASCII symbols a peer can put there (`4111#1111#…`, `(4111) 1111 …`, `[4111][1111]…`).
        case "/", ",", ":", ";", "|", "+", "=", "\"", "'", "\\", "*", "~", "#", "@", "!", "$", "%", "&", "?", "^",
            "`", "(", ")", "[", "]", "{", "}", "<", ">":
            .punctuation
        // Combining marks written over the digits (`4̂1̂…`, a keycap `4️⃣`): the digits still read as one number.
        case _ where isMark(scalar): .separator
        // The fullwidth forms of ASCII (`４`, `－`, `／`) are ASCII's characters moved by 0xFEE0.
        case "\u{FF01}"..."\u{FF5E}": kindBeyondTable(of: Unicode.Scalar(scalar.value - 0xFEE0)!)
        // Dots and minus signs other than the ASCII ones, which a formatted page or a word processor may put
        // between a card number's groups: the minus sign, the middle dots, the dot leader, the hyphenation point,
        // the bullets.
        case "\u{2212}", "\u{02D7}", "\u{2796}", "\u{00B7}", "\u{0387}", "\u{2024}", "\u{2027}", "\u{2022}",
            "\u{2043}", "\u{2219}", "\u{22C5}", "\u{2E31}", "\u{30FB}", "\u{FF65}":
            .separator
        // Characters that look like the ASCII punctuation above, or like a times sign or a full stop: slashes
        // (division, fraction, big solidus), asterisks (operator, low, heavy, Arabic five-pointed star), tildes
        // (operator, swung dash), ratio, divides, broken and double bars, the modifier colon, the multiplication
        // and division signs, the ideographic comma and full stop, the Arabic comma and semicolon.
        case "\u{2215}", "\u{2044}", "\u{29F8}", "\u{2217}", "\u{204E}", "\u{2731}", "\u{066D}", "\u{223C}",
            "\u{2053}", "\u{2236}", "\u{2223}", "\u{00A6}", "\u{2016}", "\u{02D0}", "\u{00D7}", "\u{00F7}",
            "\u{3001}", "\u{3002}", "\u{060C}", "\u{061B}":
            .punctuation
        // Control and format characters (DEL, a zero-width space) are invisible in a log or on a terminal: digits
        // split by them read as one number, so they join a run as a space does.
        case "\u{0}"..."\u{1F}", "\u{7F}"..."\u{9F}": .separator
        default:
            if scalar.isASCII {
                .other
            } else if scalar.properties.generalCategory == .format {
                .separator
            } else if scalar.properties.numericType == .decimal {
                .digit
            } else if scalar.properties.isWhitespace || scalar.properties.generalCategory == .dashPunctuation {
                .separator
            } else {
                .other
            }
        }
    }

    /// A comma or semicolon (ASCII, fullwidth, ideographic or Arabic), what separates the items of a list, or a
    /// bar, what separates a table's columns (`| 4761 | 0000 | 1000 | 0009 |`).
    static func isListMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case ",", ";", "\u{FF0C}", "\u{FF1B}", "\u{3001}", "\u{061B}", "\u{060C}", "|", "\u{FF5C}", "\u{00A6}",
            "\u{2016}", "\u{2223}":
            true
        default: false
        }
    }

    /// A combining mark written over a digit: the blocks of combining diacritics and of marks for symbols (the
    /// keycap), and the variation selectors.
    static func isMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0300...0x036F, 0x1AB0...0x1AFF, 0x1DC0...0x1DFF, 0x20D0...0x20FF, 0xFE00...0xFE0F, 0xFE20...0xFE2F:
            true
        default: false
        }
    }

    /// The positions of the digits to replace, in increasing order.
    static func maskedPositions(
        count: Int, hexIdentifiersWhole: Bool = false, scalar: (Int) -> Unicode.Scalar
    ) -> [Int] {
        func kind(_ index: Int) -> Kind { Self.kind(of: scalar(index)) }
        /// The number of characters at `index` that join the digits before them to those after them, and whether
        /// they hold punctuation (which joins only groups that look like a card number's), or nil when they do not
        /// join: one separator of any kind, or a gap of up to `widestGap` spaces, hyphens, dots, underscores, tabs or
        /// line breaks with at most two punctuation characters among them (`4111  1111`, `4111 - 1111`,
        /// `4111\r\n1111`, `4111 / 1111`, `4111**1111`). A comma, semicolon or bar with anything beside it ends the
        /// run: `1000, 2000, 4000, 8000` is a list, `| 1000 | 2000 |` a table's row.
        func joint(at index: Int) -> (length: Int, punctuated: Bool)? {
            var end = index
            var punctuation = 0
            var listMark = false
            while end < count, end - index <= widestGap {
                switch kind(end) {
                case .digit:
                    guard end > index else { return nil }
                    if listMark && end - index > 1 { return nil }
                    return (end - index, punctuation > 0)
                case .separator, .dot:
                    end += 1
                case .punctuation:
                    punctuation += 1
                    if isListMark(scalar(end)) { listMark = true }
                    guard punctuation <= 2 else { return nil }
                    end += 1
                case .other:
                    return nil
                }
            }
            return nil
        }
        var masked: [Int] = []
        var index = 0
        while index < count {
            guard kind(index) == .digit else {
                index += 1
                continue
            }
            // Most runs in a log line (times, ports, counts) are too short to hold a card number: find the run's end
            // and count its digits first, so that they cost no allocation.
            var runEnd = index
            var runDigits = 0
            while runEnd < count {
                if kind(runEnd) == .digit {
                    runDigits += 1
                    runEnd += 1
                } else if let (length, _) = joint(at: runEnd) {
                    runEnd += length
                } else {
                    break
                }
            }
            guard runDigits >= 13 else {
                index = runEnd
                continue
            }
            // Extend the run over digits and the separators that join them, noting its groups (split at every
            // separator) and its stretches (split at punctuation and wider gaps only), and whether each stretch's
            // groups are joined by dots alone.
            var end = index
            var groups: [[Int]] = [[]]
            var stretches: [Stretch] = [Stretch()]
            while end < count {
                let current = kind(end)
                if current == .digit {
                    groups[groups.count - 1].append(end)
                    stretches[stretches.count - 1].append(end)
                    end += 1
                } else if let (length, punctuated) = joint(at: end) {
                    groups.append([])
                    // Combining marks over a digit (a keycap's two) split nothing: a gap of them is one.
                    let marksOnly = (end..<end + length).allSatisfy { Self.isMark(scalar($0)) }
                    if punctuated || (length > 1 && !marksOnly) {
                        stretches.append(Stretch())
                    } else {
                        stretches[stretches.count - 1].groups.append([])
                        stretches[stretches.count - 1].dotJoins.append(length == 1 && scalar(end) == ".")
                        if current != .dot { stretches[stretches.count - 1].dotted = false }
                    }
                    end += length
                } else {
                    break
                }
            }
            if groups.count == 1,
                isVisaTokenReference(digits: index..<end, scalar: scalar)
                    || (isHexIdentifierPart(digits: index..<end, count: count, scalar: scalar)
                        && (hexIdentifiersWhole || !holdsLuhnValidNumber(digits: index..<end, scalar: scalar)))
            {
                index = end
                continue
            }
            if let uuid = uuid(around: index..<end, count: count, scalar: scalar),
                hexIdentifiersWhole || !uuidHoldsCardNumber(uuid, scalar: scalar)
            {
                index = end
                continue
            }
            // A stretch of 13 digits or more is masked whole but its last four. Between such stretches, and
            // between IPv4 addresses (four dotted groups of at most three digits, before a port or after a
            // scheme), consecutive groups are masked when they look like a card number's.
            var between: [[Int]] = []
            let split = stretches.flatMap { $0.splitAtAddresses(scalar: scalar) }
            for stretch in split.flatMap({ $0.splitAtTimes(scalar: scalar) }) {
                let digits = stretch.digits
                if digits.count >= 13, !isShortOfAVisaNumber(stretch.groups, scalar: scalar) {
                    masked += cardNumberGroups(between, scalar: scalar)
                    between = []
                    masked += digits.dropLast(4)
                } else if stretch.dotted, stretch.groups.count == 4, digits.count <= 12 {
                    masked += cardNumberGroups(between, scalar: scalar)
                    between = []
                } else {
                    between += stretch.groups
                }
            }
            masked += cardNumberGroups(between, scalar: scalar)
            index = end
        }
        return masked
    }

    /// The most characters between two digit groups that still join them: a gap as a typed or pasted card number
    /// has between its groups (`4111  1111`, `4111 - 1111`, a line break written as `\r\n`). Wider gaps lay out
    /// columns, not card numbers.
    static let widestGap = 4

    /// Consecutive digit groups joined by single separators other than punctuation.
    struct Stretch {
        var groups: [[Int]] = [[]]
        var dotted = true
        /// For each pair of consecutive groups, whether a single ASCII full stop joins them (as in an IPv4
        /// address); kept only until `splitAtAddresses`.
        var dotJoins: [Bool] = []
        /// The positions of the stretch's digits, in order. A loop, not `Array(groups.joined())`: a stretch of
        /// millions of digits (a message of megabytes of numbers) spent a third of its masking joining them.
        var digits: [Int] {
            var all: [Int] = []
            all.reserveCapacity(groups.reduce(0) { $0 + $1.count })
            for group in groups { all.append(contentsOf: group) }
            return all
        }

        /// This stretch split around the IPv4 addresses in it (four groups of one to three ASCII digits joined by
        /// single full stops, with no full stop joining them to more groups), each a dotted stretch of its own, which
        /// the masking then leaves alone as it does an address standing alone: `attempt 3 192.168.178.100:7001` and
        /// `attempt 3 192.168.178.100` was masked because a space joined the address to other digits. Unless some 13
        /// to 19 of the stretch's digits in a row, an address's among them, pass the Luhn check, as a card number
        /// written that way does.
        /// An address's parts are 0 to 255 without a leading zero.
        func splitAtAddresses(scalar: (Int) -> Unicode.Scalar) -> [Stretch] {
            guard groups.count > 4, dotJoins.count == groups.count - 1 else { return [self] }
            let all = digits
            guard all.allSatisfy({ scalar($0).isASCII }) else { return [self] }
            var addresses: [Int] = []  // the first group of each
            /// An address's part: 0 to 255, written without a leading zero (`010` and `000` are no address's).
            func isOctet(_ group: [Int]) -> Bool {
                guard (1...3).contains(group.count) else { return false }
                let value = group.reduce(0) { $0 * 10 + Int(scalar($1).value) - 48 }
                return value <= 255 && (group.count == 1 || scalar(group[0]) != "0")
            }
            var index = 0
            while index + 3 < groups.count {
                let isAddress =
                    (index...index + 3).allSatisfy { isOctet(groups[$0]) }
                    && (index..<index + 3).allSatisfy { dotJoins[$0] }
                    && (index == 0 || !dotJoins[index - 1]) && (index + 3 == groups.count - 1 || !dotJoins[index + 3])
                if isAddress {
                    addresses.append(index)
                    index += 4
                } else {
                    index += 1
                }
            }
            guard !addresses.isEmpty else { return [self] }
            // A card number may run across an address's edge (`attempt 3 4111 111.111.111.111`), or be written as
            // two addresses: 13 to 19 digits in a row that pass the Luhn check, some of them an address's, keep the
            // stretch whole, and masked. (Digits outside the addresses alone are masked as ever once split off.)
            // About one run of 13 digits in ten passes, and more of longer runs: an address next to a few digits
            // is mostly readable, a list of addresses joined by spaces mostly not.
            var inAddress: [Bool] = []
            for (offset, group) in groups.enumerated() {
                let address = addresses.contains { ($0...($0 + 3)).contains(offset) }
                inAddress += Array(repeating: address, count: group.count)
            }
            let values = all.map { Int(scalar($0).value) - 48 }
            if PANRuns.holdsLuhnValidRun(values, where: { window in window.contains { inAddress[$0] } }) {
                return [self]
            }
            var parts: [Stretch] = []
            var next = 0
            for first in addresses {
                if next < first { parts.append(Stretch(groups: Array(groups[next..<first]), dotted: false)) }
                parts.append(Stretch(groups: Array(groups[first...first + 3]), dotted: true))
                next = first + 4
            }
            if next < groups.count { parts.append(Stretch(groups: Array(groups[next...]), dotted: false)) }
            return parts
        }

        mutating func append(_ digit: Int) { groups[groups.count - 1].append(digit) }

        /// This stretch split around its groups of 13 digits that do not start with a 4, each such group a stretch
        /// of its own: no scheme's grouping has a group of 13 digits, so such a group is a time in milliseconds
        /// (`1764647000000-123`, a time and a sequence number; `1764647000000 42`), not part of a card number,
        /// and is logged as it is. The groups on either side of it are still looked at, each side alone
        /// (`1764647000000-4111-1111-1111-1111` masks the card number after the time).
        func splitAtTimes(scalar: (Int) -> Unicode.Scalar) -> [Stretch] {
            guard groups.count > 1,
                groups.contains(where: { PANRuns.isShortOfAVisaNumber([$0], scalar: scalar) })
            else { return [self] }
            var parts: [Stretch] = []
            var current: [[Int]] = []
            func close() {
                if !current.isEmpty { parts.append(Stretch(groups: current, dotted: dotted)) }
                current = []
            }
            for group in groups {
                if PANRuns.isShortOfAVisaNumber([group], scalar: scalar) {
                    close()
                    parts.append(Stretch(groups: [group], dotted: dotted))
                } else {
                    current.append(group)
                }
            }
            close()
            return parts
        }
    }

    /// Whether `groups` is a single group of 13 digits that does not start with a 4: a number of 13 digits is a
    /// card number only for Visa, whose numbers start with a 4, so this is something else (a time in
    /// milliseconds, `1764647000000`) and is logged as it is.
    static func isShortOfAVisaNumber(_ groups: [[Int]], scalar: (Int) -> Unicode.Scalar) -> Bool {
        guard groups.count == 1, let group = groups.first, group.count == 13 else { return false }
        return scalar(group[0]).properties.numericValue != 4
    }

    /// The digits to mask of a run split by punctuation: those of every stretch of consecutive groups that looks
    /// like a card number's (13–19 digits in groups of at least three), but its last four. A stretch is looked for
    /// anywhere in the run, so that groups before or after it (`4111/1111/1111/1111/12/29`, the expiry written on)
    /// do not let the card number through.
    static func cardNumberGroups(_ groups: [[Int]], scalar: (Int) -> Unicode.Scalar) -> [Int] {
        guard groups.count > 1 else { return [] }
        let digits = Array(groups.joined())
        var masked: [Int] = []
        // Digits are masked from a stretch's first to its fifth last; stretches start further on each time, so the
        // digits up to `covered` are the ones already masked.
        var covered = 0
        var first = 0
        for start in groups.indices {
            defer { first += groups[start].count }
            // A card number's first group is four to six digits in every scheme's grouping: 13 digits that do not
            // start with a 4 open no card number, so a time in milliseconds and what follows it
            // (`1764647000000:123`, a time and a sequence number) stay readable. Groups after it are still
            // looked at from the next one on.
            if isShortOfAVisaNumber([groups[start]], scalar: scalar) { continue }
            var length = 0
            var longest = 0
            // Groups of three digits or more: at most six fit in 19 digits, so this looks a few groups ahead.
            for group in groups[start...] {
                guard group.count >= 3, length + group.count <= 19, !isShortOfAVisaNumber([group], scalar: scalar)
                else { break }
                length += group.count
                if length >= 13 { longest = length }
            }
            guard longest > 0 else { continue }
            let end = first + longest - 4
            if end > covered {
                masked += digits[max(first, covered)..<end]
                covered = end
            }
        }
        return masked
    }

    /// Whether the digits at `digits` lie inside a hex identifier: a digest standing alone (a key id, a hash: 32, 40,
    /// 64 or 128 hex characters, at least one a letter) or a Mastercard token reference id (`DWSPMC` and 32 hex
    /// characters). Such an identifier holds 13 decimal digits in a row often enough (a key id about one time in
    /// 23) to come out partly masked, and then names nothing: "no decryption key has kid 66e5…b3b***********3088…".
    /// A card number glued into one of exactly these shapes is not a way a card number reaches a log.
    static func isHexIdentifierPart(digits: Range<Int>, count: Int, scalar: (Int) -> Unicode.Scalar) -> Bool {
        func isHex(_ index: Int) -> Bool {
            let value = scalar(index)
            return ("0"..."9").contains(value) || ("a"..."f").contains(value) || ("A"..."F").contains(value)
        }
        func isAlphanumeric(_ index: Int) -> Bool {
            let value = scalar(index)
            return value.properties.isAlphabetic || value.properties.numericType != nil
        }
        guard digits.allSatisfy(isHex) else { return false }
        // No identifier taken whole is longer than 128 hex characters (and `DWSPMC`): the scan stops there, or a
        // long stretch of hex text with many runs of digits in it was scanned again for each, in quadratic time.
        let longest = 128 + 6
        var start = digits.lowerBound
        while start > 0, isHex(start - 1), digits.upperBound - start <= longest { start -= 1 }
        var end = digits.upperBound
        while end < count, isHex(end), end - start <= longest { end += 1 }
        guard end - start <= longest else { return false }
        guard end == count || !isAlphanumeric(end) else { return false }
        if start == 0 || !isAlphanumeric(start - 1) {
            let hasLetter = (start..<end).contains { !("0"..."9").contains(scalar($0)) }
            return hasLetter && [32, 40, 64, 128].contains(end - start)
        }
        // `DWSPMC` and 32 hex characters: the prefix's `C` is a hex letter, so the scan took it in.
        let prefix = Array("DWSPMC".unicodeScalars)
        let prefixStart = start - (prefix.count - 1)
        guard prefixStart >= 0, end - (start + 1) == 32,
            prefix.indices.allSatisfy({ scalar(prefixStart + $0) == prefix[$0] })
        else { return false }
        return prefixStart == 0 || !isAlphanumeric(prefixStart - 1)
    }

    /// The UUID (`123e4567-e89b-12d3-a456-426614174000`: 8, 4, 4, 4 and 12 hex characters joined by hyphens,
    /// standing alone) that the run of digits at `digits` lies inside, as the positions of its 36 characters; nil
    /// when there is none. Its hyphens join its groups of digits into runs of 13 or more often enough (about one
    /// random UUID in 45) that nodes' own ids came out partly masked and, as values, were refused as card numbers.
    static func uuid(around digits: Range<Int>, count: Int, scalar: (Int) -> Unicode.Scalar) -> Range<Int>? {
        func isPart(_ index: Int) -> Bool {
            let value = scalar(index)
            return ("0"..."9").contains(value) || ("a"..."f").contains(value) || ("A"..."F").contains(value)
                || value == "-"
        }
        func isAlphanumeric(_ index: Int) -> Bool {
            let value = scalar(index)
            return value.properties.isAlphabetic || value.properties.numericType != nil
        }
        guard digits.count <= 36, digits.allSatisfy(isPart) else { return nil }
        // The UUID may have hyphens of the text around it (`test-123e4567-…`): each 36-character window that holds
        // the run is tried.
        let hyphens = [8, 13, 18, 23]
        for start in max(0, digits.upperBound - 36)...digits.lowerBound where start + 36 <= count {
            let end = start + 36
            guard start == 0 || !isAlphanumeric(start - 1), end == count || !isAlphanumeric(end) else { continue }
            let fits = (0..<36).allSatisfy { offset in
                let index = start + offset
                return hyphens.contains(offset) ? scalar(index) == "-" : isPart(index) && scalar(index) != "-"
            }
            if fits { return start..<end }
        }
        return nil
    }

    /// Whether whole groups of a UUID, next to each other and all digits, make a number of 13 to 19 digits that
    /// passes the Luhn check: how a card number is written into one (`41111111-1111-1111-…`). A random UUID holds
    /// such groups about once in ten thousand.
    static func uuidHoldsCardNumber(_ uuid: Range<Int>, scalar: (Int) -> Unicode.Scalar) -> Bool {
        let bounds = [(0, 8), (9, 13), (14, 18), (19, 23), (24, 36)].map {
            (uuid.lowerBound + $0.0)..<(uuid.lowerBound + $0.1)
        }
        let numeric = bounds.map { group in group.allSatisfy { ("0"..."9").contains(scalar($0)) } }
        for first in bounds.indices where numeric[first] {
            var positions: [Int] = []
            for group in first..<bounds.count {
                guard numeric[group] else { break }
                positions += bounds[group]
                if (13...19).contains(positions.count),
                    passesLuhn(positions.map { Int(scalar($0).value) - 48 }[...])
                {
                    return true
                }
            }
        }
        return false
    }

    /// Whether some 13 to 19 consecutive digits of `digits` pass the Luhn check, as every card number does. A hex
    /// identifier's digits pass it about one time in ten; a card number written into one (a caller's trace id
    /// `0a4111111111111111fe…`, echoed in every log line of its flow) always does, and is then masked, where the
    /// identifier's shape let it through. Masking is the same on every line and node, so the trace id still finds
    /// its flow's lines in its masked form.
    static func holdsLuhnValidNumber(digits: Range<Int>, scalar: (Int) -> Unicode.Scalar) -> Bool {
        holdsLuhnValidRun(digits.map { Int(scalar($0).value) - 48 })
    }

    /// Whether some 13 to 19 consecutive `values` (digits by value), among the runs `include` accepts (by their
    /// range in `values`), pass the Luhn check.
    static func holdsLuhnValidRun(_ values: [Int], where include: (Range<Int>) -> Bool = { _ in true }) -> Bool {
        for start in values.indices {
            for length in 13...19 where start + length <= values.count {
                let window = start..<(start + length)
                if include(window), passesLuhn(values[window]) { return true }
            }
        }
        return false
    }

    /// The Luhn check of digits given by value.
    static func passesLuhn(_ values: ArraySlice<Int>) -> Bool {
        var sum = 0
        for (offset, value) in values.reversed().enumerated() {
            let weighted = offset % 2 == 1 ? value * 2 : value
            sum += weighted > 9 ? weighted - 9 : weighted
        }
        return sum % 10 == 0
    }

    /// Whether the digits at `digits` are those of a Visa token reference id (`DigitalCardID`: `DNITHE` and 26
    /// digits), which names a token without being a card number. Nodes log one with each token event; masked, every
    /// Visa token read `DNITHE**********************1234`, and a token's events could not be told from another's.
    /// Digits glued on after the 26 make the run a different one, which is masked as any other.
    static func isVisaTokenReference(digits: Range<Int>, scalar: (Int) -> Unicode.Scalar) -> Bool {
        let prefix = Array("DNITHE".unicodeScalars)
        guard digits.count == 26, digits.lowerBound >= prefix.count else { return false }
        let start = digits.lowerBound - prefix.count
        return prefix.indices.allSatisfy { scalar(start + $0) == prefix[$0] }
            && digits.allSatisfy { ("0"..."9").contains(scalar($0)) }
    }
}
