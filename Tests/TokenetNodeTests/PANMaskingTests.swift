import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetTestSupport
import TokenetWire

@testable import TokenetNode

@Suite struct PANMaskingTests {
    @Test(arguments: [
        ("card 4111111111111111 approved", "card ************1111 approved"),
        ("4111111111111", "*********1111"),  // 13 digits, the shortest PAN
        ("6011000990139424123", "***************4123"),  // 19 digits, the longest PAN
        ("4111 1111 1111 1111", "**** **** **** 1111"),
        ("4111-1111-1111-1111", "****-****-****-1111"),
        // Other single separators a typed or pasted PAN arrives with; an error that echoes it must not leak it.
        ("4761.0000.1000.0009", "****.****.****.0009"),
        ("4761_0000_1000_0009", "****_****_****_0009"),
        ("4761\t0000\t1000\t0009", "****\t****\t****\t0009"),
        ("4761\n0000\n1000\n0009", "****\n****\n****\n0009"),
        ("a=5500000000000004,b=340000000000009", "a=************0004,b=***********0009"),
        ("pan:4111111111111111.", "pan:************1111."),
        ("123456789012345678901234", "********************1234"),  // longer runs never leak either
        // Slashes, commas, colons and semicolons join groups that look like a card number's.
        ("4761/0000/1000/0009", "****/****/****/0009"),
        ("pan=4761,0000,1000,0009.", "pan=****,****,****,0009."),
        ("4761:0000:1000:0009", "****:****:****:0009"),
        ("3400;000000;00009", "****;******;*0009"),  // 15 digits in American Express groups
        ("4761 0000/1000 0009", "**** ****/**** 0009"),
        ("4761000010000009:123", "************0009:123"),  // a PAN and what follows it
        ("4761000010000009,4111111111111111", "************0009,************1111"),
        // Groups of other lengths before or after a PAN's: an expiry written on, a PAN glued to another group.
        ("4761/0000/1000/0009/12/29", "****/****/****/0009/12/29"),
        ("pan 12/4761/0000/1000/0009", "pan 12/****/****/****/0009"),
        ("4761:0000:1000:0009:1234", "****:****:****:****:1234"),
        // Fullwidth and other Unicode decimal digits.
        ("ｐａｎ ４７６１００００１００００００９", "ｐａｎ ************０００９"),
        ("４７６１-００００-１０００-０００９", "****-****-****-０００９"),
        ("٤٧٦١٠٠٠٠١٠٠٠٠٠٠٩", "************٠٠٠٩"),
        // Unicode separators: the fullwidth space, hyphen and solidus typed with fullwidth digits, and the no-break
        // spaces and dashes of a number copied from a formatted page.
        ("４７６１　００００　１０００　０００９", "****　****　****　０００９"),
        ("４７６１－００００－１０００－０００９", "****－****－****－０００９"),
        ("４７６１／００００／１０００／０００９", "****／****／****／０００９"),
        ("4761\u{00A0}0000\u{00A0}1000\u{00A0}0009", "****\u{00A0}****\u{00A0}****\u{00A0}0009"),
        ("4761\u{202F}0000\u{202F}1000\u{202F}0009", "****\u{202F}****\u{202F}****\u{202F}0009"),
        ("4761\u{2013}0000\u{2013}1000\u{2013}0009", "****\u{2013}****\u{2013}****\u{2013}0009"),
        // The minus sign, the middle dots, the dot leader, the hyphenation point and the bullets.
        ("4761\u{2212}0000\u{2212}1000\u{2212}0009", "****\u{2212}****\u{2212}****\u{2212}0009"),
        ("4761\u{00B7}0000\u{00B7}1000\u{00B7}0009", "****\u{00B7}****\u{00B7}****\u{00B7}0009"),
        ("4761\u{2024}0000\u{2027}1000\u{2219}0009", "****\u{2024}****\u{2027}****\u{2219}0009"),
        ("4761\u{2E31}0000\u{30FB}1000\u{2022}0009", "****\u{2E31}****\u{30FB}****\u{2022}0009"),
        // An asterisk or a tilde between a card number's groups, as any punctuation.
        ("4761*0000*1000*0009", "****\u{2A}****\u{2A}****\u{2A}0009"),
        ("4761~0000~1000~0009", "****~****~****~0009"),
        // Digits glued to a Visa token reference id make it something else, masked as any run.
        ("DNITHE479332173754380081751899834111111111111111", "DNITHE**************************************1111"),
        ("DNITHE47933217375438008175189983-4111", "DNITHE**************************-4111"),
        ("DNITHE4111111111111111", "DNITHE************1111"),
        // Wider gaps between groups, as a PAN is typed or pasted: two to four spaces, or separators mixed.
        ("4111  1111  1111  1111", "****  ****  ****  1111"),
        ("1234 5678  9012 3456", "**** ****  **** 3456"),
        ("pan 4761 - 0000 - 1000 - 0009 declined", "pan **** - **** - **** - 0009 declined"),
        ("4761 -0000_ 1000\t 0009", "**** -****_ ****\t 0009"),
        ("4761\r\n0000\r\n1000\r\n0009", "****\r\n****\r\n****\r\n0009"),
        ("4761    0000    1000    0009", "****    ****    ****    0009"),
        ("3400  000000  00009", "****  ******  *0009"),  // American Express groups
        ("4761  0000  1000  0009  12/29", "****  ****  ****  0009  12/29"),
        ("４７６１　　００００　　１０００　　０００９", "****　　****　　****　　０００９"),
        // 13 digits are a card number's when they start with a 4 (Visa's), or when they are grouped.
        ("4764647000000", "*********0000"),
        ("at_ms=4764647000000", "at_ms=*********0000"),
        ("1764 6470 00000", "**** **** *0000"),
        ("1764  6470  00000", "****  ****  *0000"),
        // A time in milliseconds next to a card number leaves the card number masked.
        ("1764647000000 4111111111111111", "1764647000000 ************1111"),
        ("1764647000000-4111111111111111", "1764647000000-************1111"),
        ("1764647000000-4111-1111-1111-1111", "1764647000000-****-****-****-1111"),
        ("4111-1111-1111-1111-1764647000000", "****-****-****-1111-1764647000000"),
        ("4111-1111-1111-1111", "****-****-****-1111"),
        ("at_ms=1764647000000,pan=4111111111111111", "at_ms=1764647000000,pan=************1111"),
        ("1764647000000,4111111111111111", "1764647000000,************1111"),
        ("1764647000000:4111:1111:1111:1111", "1764647000000:****:****:****:1111"),
        ("4764647000000:123", "*********0000:123"),
        // Groups that look like a card number's after a run of 13 digits or more, or after an IPv4 address.
        ("4761000010000009,4111/1111/1111/1111", "************0009,****/****/****/1111"),
        ("192.168.1.1:4111/1111/1111/1111", "192.168.1.1:****/****/****/1111"),
    ])
    func masksCardNumbers(input: String, expected: String) {
        #expect(maskPAN(input) == expected)
    }

    @Test(arguments: [
        "no digits here",
        "pid=123456 port=7001",
        "411111111111",  // 12 digits: too short to be a PAN
        "2026-11-30 04:25:50",
        "2026-11-30T04:25:50.123Z listen=127.0.0.1:7001",
        "192.168.100.200",  // 12 digits
        "2026/11/30 04:25:50",  // 14 digits, but in short groups
        "10:15:30;2026:11:30",
        "listen=127.0.0.1:7001 peer=[::1]:40000",
        "1,048,576 bytes; 4,194,304 bytes",
        "12:00/12:30/13:00/13:30/14:00",
        // An IPv4 address of three-digit parts and its port: 16 digits in long groups, but a node's address.
        "listening on 192.168.178.100:7001",
        // An address a space joins to other digits (none of which make a Luhn-valid run of 13 to 19 with it).
        "attempt 3 192.168.178.100:7001",
        "peer=192.168.100.200:17001",
        "203.113.100.254:443",
        "tls://192.168.178.100:7001/issuer",
        "carte nº 192.168.178.100:7001",
        // 13 digits standing alone that do not start with a 4: no card number's (times in milliseconds).
        "1764647000000",
        "sent_at_ms=1764647000000 received_at_ms=1764647000123",
        "[1764647000000,1764647000500]",
        // A time in milliseconds and what punctuation joins to it: a sequence number, another time.
        "1764647000000:123",
        "id=1764647000000:1234 next=1764647000000/4567",
        "1764647000000;123456",
        // Or what a space or a hyphen joins to it, on either side: no card number has a group of 13 digits.
        "1764647000000-123",
        "1764647000000 42",
        "seq 123-1764647000000",
        "123:1764647000000",
        "１７６４６４７００００００－１２３",
        "１７６４６４７００００００",
        // Numbers a few spaces apart in ordinary text: short groups, or a gap with a comma, or columns.
        "took 12 ms 3456 calls",
        "1  2  3  4  5  6  7  8  9  10  11  12  13  14",
        "10  200  3000  40000",
        "2026-11-30  04:25:50  1234",
        "retrying in 1000, 2000, 4000, 8000 ms",
        "listening on ports 7001, 7002, 7003, 7004",
        "1200     3400     5600     7800",
        "",
    ])
    func leavesOtherTextAlone(input: String) {
        #expect(maskPAN(input) == input)
    }

    /// A Visa token's reference id (`DNITHE` and 26 digits) names a token, not a card: logged as it is, so that one
    /// token's events can be told from another's. It used to come out as `DNITHE**********************9983`.
    @Test func leavesVisaTokenReferenceIDsAlone() {
        for _ in 0..<1000 {
            let id = "DNITHE" + (0..<26).map { _ in String(Int.random(in: 0...9)) }.joined()
            for line in [
                "token activated digital_card_id=\(id)", id, "carte nº \(id).",
                "the wallet has no digital card \"\(id)\"",
            ] {
                #expect(maskPAN(line) == line)
            }
        }
    }

    /// Key ids and other digests, and Mastercard token reference ids (`DWSPMC` and 32 hex characters), pass through
    /// whole: about one key id in 23 holds 13 digits in a row and came out partly masked. One whose digits hold
    /// 13–19 in a row that pass the Luhn check, as a card number does, is masked, the same way each time. A card
    /// number glued to hex letters in any other shape is still masked.
    @Test func leavesHexIdentifiersAlone() {
        func hex(_ length: Int, _ alphabet: String) -> String {
            String((0..<length).map { _ in alphabet.randomElement()! })
        }
        /// Whether `id` holds 13–19 decimal digits in a row that pass the Luhn check, in a run that is masked
        /// anywhere (13 digits that do not start with a 4 are a time, as `leavesTimesInMillisecondsAlone` shows).
        func holdsCardNumber(_ id: String) -> Bool {
            let runs = id.split(whereSeparator: { !$0.isASCII || !$0.isNumber }).map(Array.init)
            return runs.contains { run in
                (run.count > 13 || run.first == "4")
                    && run.indices.contains { start in
                        (13...19).contains {
                            start + $0 <= run.count && Luhn.isValid(String(run[start..<(start + $0)]))
                        }
                    }
            }
        }
        var maskedIDs = 0
        for _ in 0..<2000 {
            for id in [
                hex(64, "0123456789abcdef"), hex(40, "0123456789abcdef"), hex(32, "0123456789ABCDEF"),
                "DWSPMC" + hex(32, "0123456789ABCDEF"),
            ] where id.contains(where: \.isLetter) {
                let masks = holdsCardNumber(id)
                if masks { maskedIDs += 1 }
                for line in ["no decryption key has kid \"\(id)\"", "kid=\(id)", id, "(\(id))."] {
                    let shown = maskPAN(line)
                    #expect((shown == line) != masks, "\(line) -> \(shown)")
                    #expect(shown == maskPAN(line))
                }
            }
        }
        // About one identifier in 200 (random ids vary): far from every one, as a check that masked them all would.
        #expect(maskedIDs < 200, "\(maskedIDs) of 8000 identifiers masked")
        let traceID = "0a" + "4111111111111111" + "fe" + String(repeating: "c", count: 12)
        #expect(maskPAN("trace=\(traceID) call") == "trace=0a************1111fecccccccccccc call")
        let card = "4111111111111111"
        let masked = "************1111"
        let letters47 = String(repeating: "a", count: 47)
        for (line, expected) in [
            ("abc" + card + "def", "abc" + masked + "def"),
            (letters47 + card, letters47 + masked),  // 63 characters: no digest's length
            ("a" + letters47 + card + "g", "a" + letters47 + masked + "g"),  // glued to a letter that is not hex
            ("DWSPMC" + "ABCDEFABCDEFABC" + card, "DWSPMC" + "ABCDEFABCDEFABC" + masked),  // 31 after the prefix
            ("XDWSPMC" + "ABCDEFABCDEFABCD" + card, "XDWSPMC" + "ABCDEFABCDEFABCD" + masked),
        ] {
            #expect(maskPAN(line) == expected)
        }
    }

    /// The cases the Wireshark dissector's copy of the rule (`Tools/dissector/tokenet.lua`) is checked against in a
    /// live capture (`check-dissector`) are what `maskPAN` makes of them: the two stay one rule.
    @Test func theDissectorsCasesAreMaskedAsTheNodesMaskThem() throws {
        struct Case: Decodable {
            var text: String
            var masked: String
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: PackageRoot.path("Tools/dissector/masking-cases.json")))
        let cases = try JSONDecoder().decode([Case].self, from: data)
        #expect(cases.count >= 20)
        for item in cases {
            #expect(maskPAN(item.text) == item.masked, "\(item.text.debugDescription)")
            // As bytes (what `tokenet decode` does behind base64): the same digits left, each masked digit's
            // bytes all asterisks.
            let bytes = String(decoding: maskPAN(utf8: Array(item.text.utf8)), as: UTF8.self)
            #expect(bytes.filter(\.isNumber) == item.masked.filter(\.isNumber), "\(item.text.debugDescription)")
        }
        // Bytes that are no UTF-8 around a card number take nothing away from it.
        let mixed = [0xFF, 0x0A] + Array("4111 1111 1111 1111".utf8) + [0xC3]
        #expect(maskPAN(utf8: mixed) == [0xFF, 0x0A] + Array("**** **** **** 1111".utf8) + [0xC3])
    }

    /// A pipe, plus, equals sign, quote or backslash between groups, and combining marks over the digits (a keycap),
    /// hid a card number from the rule: in logs, in errors sent back, and in ids, which were taken.
    @Test func moreSeparatorsAndMarksHideNoCardNumber() {
        for text in [
            "4761|0000|1000|0009", "QAV-pipe-4761|0000|1000|0009", "4761+0000+1000+0009", "4761=0000=1000=0009",
        ] {
            #expect(!maskPAN(text).contains("4761"), "\(text)")
            #expect(IdentifierRules.holdsCardNumber(identifier: text), "\(text)")
        }
        #expect(maskPAN("a=1|b=22|c=333") == "a=1|b=22|c=333")
        #expect(maskPAN("| 4761 | 0000 | 1000 | 0009 |") == "| 4761 | 0000 | 1000 | 0009 |")
    }

    /// Punctuation with spaces around it, doubled, or written as a lookalike from another block (a division slash,
    /// a multiplication sign) hid a card number as well: one or two of it in a gap join the groups as it does
    /// alone. A comma, semicolon or bar in a gap still ends the run: lists and table rows stay readable.
    @Test func punctuationInAGapHidesNoCardNumber() {
        for text in [
            "4761 / 0000 / 1000 / 0009", "4761 * 0000 * 1000 * 0009", "4761 : 0000 : 1000 : 0009",
            "4761**0000**1000**0009", "4761//0000//1000//0009", "4761*/0000*/1000*/0009", "4761~~0000~~1000~~0009",
            "4761 \u{00B7} 0000 \u{00B7} 1000 \u{00B7} 0009", "4761\u{2215}0000\u{2215}1000\u{2215}0009",
            "4761\u{2044}0000\u{2044}1000\u{2044}0009", "4761\u{2217}0000\u{2217}1000\u{2217}0009",
            "4761\u{223C}0000\u{223C}1000\u{223C}0009", "4761\u{2236}0000\u{2236}1000\u{2236}0009",
            "4761\u{00D7}0000\u{00D7}1000\u{00D7}0009", "4761\u{3002}0000\u{3002}1000\u{3002}0009",
        ] {
            #expect(!maskPAN(text).contains("4761"), "\(text)")
            #expect(maskPAN(text).hasSuffix("0009"), "\(text)")
        }
        for text in [
            "retrying in 1000, 2000, 4000, 8000 ms", "1000 ; 2000 ; 4000 ; 8000", "| 1000 | 2000 | 4000 | 8000 |",
            "12:00 / 12:30 / 13:00", "1 * 2 * 3 = 6", "3 ** 4 = 81", "v1.2.3*4", "4761 /// 0000",
        ] {
            #expect(maskPAN(text) == text, "\(text)")
        }
    }

    /// UUIDs pass whole: their hyphens joined digit groups into runs of 13 or more in about one in 45, which came
    /// out partly masked and, as ids, were refused as card numbers. A card number written into whole groups of one
    /// is still masked.
    @Test func leavesUUIDsAlone() {
        var masked = 0
        var held = 0
        for _ in 0..<4000 {
            let id = Bool.random() ? UUID().uuidString : UUID().uuidString.lowercased()
            if maskPAN("id=\(id).") != "id=\(id)." { masked += 1 }
            if IdentifierRules.holdsCardNumber(identifier: id) { held += 1 }
        }
        // About one in eight thousand has whole groups of digits that make a Luhn-valid number (half a UUID in
        // 4,000, so 10 is a chance of about 1e-10; counted together the two checks reached 10 about once in 5,000).
        #expect(masked < 10, "\(masked) of 4000 masked")
        #expect(held < 10, "\(held) of 4000 said to hold a card number")
        #expect(maskPAN("123e4567-e89b-12d3-a456-426614174000") == "123e4567-e89b-12d3-a456-426614174000")
        #expect(maskPAN("41111111-1111-1111-aaaa-bbbbbbbbbbbb") == "********-****-1111-aaaa-bbbbbbbbbbbb")
        #expect(maskPAN("0123abcd-0000-aaaa-4111-111111111111") == "0123abcd-0000-aaaa-****-********1111")
        #expect(IdentifierRules.holdsCardNumber(identifier: "41111111-1111-1111-aaaa-bbbbbbbbbbbb"))
        // After a hyphen of the text around it, as in a temporary directory's name.
        let directory = "/tmp/tokenet-test-BCEEC50D-4754-4912-8487-1CDF378FA0E9/data"
        #expect(maskPAN(directory) == directory)
        // Glued to a letter, it is no UUID standing alone: looked at as any other digits.
        #expect(maskPAN("x123e4567-e89b-12d3-a456-426614174000") != "x123e4567-e89b-12d3-a456-426614174000")
    }

    /// The ids the nodes make for requests never hold a card number: about one UUID in eight thousand does (above),
    /// and a TSP refuses such a request id, so a wallet using plain UUIDs would fail one add-card in thousands. Over
    /// 40,000 ids, plain UUIDs would hold about five.
    @Test func newIDsNeverHoldACardNumber() throws {
        // About one UUID in 8,000 reads as a card number, as this one does: it is passed over for the next.
        let reading = try #require(UUID(uuidString: "41111111-1111-1111-1111-abcdefabcdef"))
        let plain = try #require(UUID(uuidString: "0b9e2a7c-5d4f-4e1a-9c3b-7f6e5d4c3b2a"))
        try #require(IdentifierRules.holdsCardNumber(identifier: reading.uuidString.lowercased()))
        var given = [reading, plain].makeIterator()
        #expect(IdentifierRules.newID(from: { given.next()! }) == plain.uuidString.lowercased())
        for _ in 0..<2_000 {
            let id = IdentifierRules.newID()
            #expect(!IdentifierRules.holdsCardNumber(identifier: id), "\(id)")
            #expect(id.utf8.count == 36 && id == id.lowercased())
        }
    }

    /// A long stretch of hex text with many runs of digits in it is masked, each run, and keeps its length. Each run
    /// used to scan the whole stretch around it for a hex identifier (120 KB took minutes); how long this takes is
    /// not asserted, only that the stretch is masked whole.
    @Test func aLongHexStretchIsMaskedWhole() {
        let text = "a" + String(repeating: "41111111111111a", count: 20_000)
        let shown = maskPAN(text)
        #expect(shown.utf8.count == text.utf8.count)
        #expect(!shown.contains("41111111111111"))
    }

    /// `holdsCardNumber`, which refuses values rather than masking log lines, takes a hex identifier whole even when
    /// its digits pass the Luhn check: a random id would otherwise be refused now and then. Anything else `maskPAN`
    /// masks, it finds.
    @Test func holdsCardNumberTakesHexIdentifiersWhole() {
        let card = "4111111111111111"
        let ids = [
            "DWSPMC" + "a" + card + String(repeating: "b", count: 15),
            "0a" + card + "fe" + String(repeating: "c", count: 12),
        ]
        for id in ids {
            #expect(maskPAN(id) != id, "\(id)")
            #expect(!holdsCardNumber(id), "\(id)")
        }
        for text in [
            card, "card 4111 1111 1111 1111", "4111-1111-1111-1111", "abc" + card + "def",
            "４１１１" + String(repeating: "1", count: 12),
        ] {
            #expect(holdsCardNumber(text), "\(text)")
        }
        for text in ["DNITHE" + String(repeating: "1", count: 26), "1764647000000", "ends 4444", "127.0.0.1:7001"] {
            #expect(!holdsCardNumber(text), "\(text)")
        }
    }

    /// Times in milliseconds (13 digits from 2001 on) are logged whole unless they start with a 4, which only a
    /// Visa card number of 13 digits does; they used to come out as `*********0000`.
    @Test func leavesTimesInMillisecondsAlone() {
        for _ in 0..<2000 {
            let time = String(Int64.random(in: 1_000_000_000_000...9_999_999_999_999))
            let shown = time.hasPrefix("4") ? String(repeating: "*", count: 9) + time.suffix(4) : time
            for (line, expected) in [
                ("at_ms=\(time)", "at_ms=\(shown)"), (time, shown), ("(\(time)).", "(\(shown))."),
                ("ts \(time) ms", "ts \(shown) ms"),
            ] {
                #expect(maskPAN(line) == expected)
            }
        }
    }

    /// Card numbers with their groups two to four separators apart, in their schemes' groupings, are masked but
    /// their last four digits, with the separators kept.
    @Test func masksCardNumbersWithWideGaps() {
        let gaps = ["  ", "   ", "    ", " - ", "- ", " -", "\r\n", "\t\t", " _ ", ". ", "\u{00A0} "]
        for _ in 0..<2000 {
            let grouping = [[4, 4, 4, 4], [4, 6, 5], [4, 6, 4], [4, 4, 4, 4, 3], [4, 4, 5]].randomElement()!
            var line = ""
            var expected = ""
            let length = grouping.reduce(0, +)
            var written = 0
            for (position, size) in grouping.enumerated() {
                if position > 0 {
                    let gap = gaps.randomElement()!
                    line += gap
                    expected += gap
                }
                for _ in 0..<size {
                    let digit = String(Int.random(in: 0...9))
                    line += digit
                    expected += written < length - 4 ? "*" : digit
                    written += 1
                }
            }
            #expect(maskPAN("pan \(line) at_ms=1764647000000") == "pan \(expected) at_ms=1764647000000")
        }
    }

    @Test func keepsNonASCIIText() {
        #expect(maskPAN("carte nº 4111111111111111 acceptée") == "carte nº ************1111 acceptée")
    }

    /// A node's own trace ids pass through the masking untouched, so one flow can be followed across the nodes' logs.
    /// Ids that held 13 digits in a row (about one in 300) came out as `a**********2471`.
    @Test func leavesGeneratedTraceIDsAlone() {
        for _ in 0..<200_000 {
            let line = "trace_id=\(Metadata.newTraceID()) elapsed_us=1234567"
            guard maskPAN(line) == line else {
                Issue.record("masked: \(line)")
                return
            }
        }
    }
}

/// The message of an error status a node sends: masked like a log line, and cut short past 2 KiB.
@Suite struct NodeStatusMessageTests {
    @Test func aMessageIsMaskedAndCutShort() {
        #expect(RPCNodeListener.statusMessage("no token 4761000010000009") == "no token ************0009")
        let long = "no account " + String(repeating: "x", count: 50_000)
        let shown = RPCNodeListener.statusMessage(long)
        #expect(shown.hasPrefix("no account xxx"))
        #expect(shown.hasSuffix("... (50011 bytes)"))
        #expect(shown.utf8.count < 2100)
        #expect(RPCNodeListener.statusMessage("fine") == "fine")
    }
}

/// The comments of Protos/ travel to every client in reflection's answers, which `tokenet call` prints as they
/// came: an example card number in one showed in full.
@Suite struct ProtoCommentCardNumberTests {
    @Test func noCommentHoldsACardNumber() {
        #expect(!ProtoRegistry.comments.isEmpty)
        for (symbol, comment) in ProtoRegistry.comments.sorted(by: { $0.key < $1.key }) {
            #expect(!IdentifierRules.holdsCardNumber(identifier: comment), "\(symbol): \(maskPAN(comment))")
        }
    }
}
