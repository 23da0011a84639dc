import Foundation
import Testing
import TokenetWire

/// The proto3 JSON mapping: names, value forms, and a clear error for anything that does not fit.
@Suite struct ProtoJSONTests {
    @Test func writesLowerCamelCaseNamesAndCanonicalValueForms() throws {
        var scalars = TestingV1.Scalars()
        scalars.fInt64 = -9_007_199_254_740_993
        scalars.fUint64 = 18_446_744_073_709_551_615
        scalars.fInt32 = -5
        scalars.fBytes = Data([0xFB, 0xFF, 0x00])
        scalars.fColor = .blue
        scalars.fDouble = .infinity
        scalars.fFloat = .nan
        scalars.fString = "tab\there \"quoted\" é"
        let json = try scalars.jsonString()
        #expect(
            json == #"{"fDouble":"Infinity","fFloat":"NaN","fInt32":-5,"fInt64":"-9007199254740993","#
                + #""fUint64":"18446744073709551615","fString":"tab\there \"quoted\" é","fBytes":"+/8A","#
                + #""fColor":"COLOR_BLUE"}"#
        )
    }

    /// With `emitDefaults`, every field is written: lists empty as `[]`, an unset message as `null`, nested messages
    /// in full; an unset member of a oneof, or a field with presence, stays out.
    @Test func emitDefaultsWritesEveryFieldButUnsetOneofMembers() throws {
        let options = JSONEncodingOptions(emitDefaults: true)
        var choice = TestingV1.Choice()
        choice.directInner = TestingV1.Choice.Nested.Inner()
        #expect(
            try choice.jsonString(options: options) == #"{"directInner":{"values":[]},"level":"LEVEL_UNSPECIFIED"}"#)
        #expect(
            try TestingV1.Choice().jsonString(options: options) == #"{"directInner":null,"level":"LEVEL_UNSPECIFIED"}"#)
        #expect(try TestingV1.Choice().jsonString() == "{}")
        let presence = try TestingV1.Presence().jsonString(options: options)
        #expect(presence == #"{"maybeMessage":null}"#)
        let repeated = try JSONValue(parsing: try TestingV1.Repeated().jsonString(options: options))
        guard case .object(let members) = repeated else {
            Issue.record("\(repeated)")
            return
        }
        #expect(members.count == 17 && members.allSatisfy { $0.value == .array([]) })
    }

    /// Every control character is written as a `\u` escape, the C1 ones (U+0080 to U+009F) too: written out, they act
    /// on a terminal, and the CLI's guard against that turned them into text that was no JSON.
    @Test func writesControlCharactersAsEscapes() throws {
        let scalars = TestingV1.Scalars(fString: "\u{1}\u{1F}\u{7F}\u{80}\u{85}\u{9B}\u{9F}\u{A0}é")
        let json = try scalars.jsonString()
        #expect(json == #"{"fString":"\u0001\u001f\u007f\u0080\u0085\u009b\u009f\#u{A0}é"}"#)
        #expect(try TestingV1.Scalars(jsonString: json) == scalars)
    }

    /// Format characters (a bidirectional override, a zero-width space, a language tag beyond the Basic Multilingual
    /// Plane) and the line and paragraph separators are written as `\u` escapes too: printed as they are, they reorder
    /// or hide what a terminal shows. The escapes read back to the same string.
    @Test func writesInvisibleCharactersAsEscapes() throws {
        let scalars = TestingV1.Scalars(fString: "a\u{202E}b\u{200B}c\u{2028}d\u{E0001}e\u{AD}f")
        let json = try scalars.jsonString()
        #expect(json == #"{"fString":"a\u202eb\u200bc\u2028d\udb40\udc01e\u00adf"}"#)
        #expect(try TestingV1.Scalars(jsonString: json) == scalars)
    }

    /// Whole numbers print as other proto3 JSON writers print them (`1`, not `1.0`), and every form reads back to
    /// the same value.
    @Test(arguments: [
        (1.0, Float(1), #"{"fDouble":1,"fFloat":1}"#),
        (-2.0, Float(-0.5), #"{"fDouble":-2,"fFloat":-0.5}"#),
        (0.1, Float(0.1), #"{"fDouble":0.1,"fFloat":0.1}"#),
        (1234567.0, Float(16_777_216), #"{"fDouble":1234567,"fFloat":16777216}"#),
        (1e20, Float(3e38), #"{"fDouble":1e+20,"fFloat":3e+38}"#),
    ])
    func writesWholeNumbersWithoutAFraction(double: Double, float: Float, expected: String) throws {
        let scalars = TestingV1.Scalars(fDouble: double, fFloat: float)
        let json = try scalars.jsonString()
        #expect(json == expected)
        let back = try TestingV1.Scalars(jsonString: json)
        #expect(back.fDouble == double && back.fFloat == float)
    }

    @Test func omitsDefaultsButKeepsSetOneofAndPresenceMembers() throws {
        var presence = TestingV1.Presence()
        presence.maybeInt = 0
        presence.maybeString = ""
        #expect(try presence.jsonString() == #"{"maybeInt":0,"maybeString":""}"#)
        let choice = TestingV1.Choice(pick: .number(0))
        #expect(try choice.jsonString() == #"{"number":"0"}"#)
        #expect(try TestingV1.Scalars(fDouble: 0, fString: "").jsonString() == "{}")
    }

    @Test func acceptsOriginalNamesNumbersAsStringsAndEnumNumbers() throws {
        let decoded = try TestingV1.Scalars(
            jsonString:
                #"{"f_int32": "7", "fInt64": 12, "f_uint32": 1e3, "fColor": 2, "fBytes": "-_8A", "fBool": true}"#
        )
        #expect(decoded.fInt32 == 7)
        #expect(decoded.fInt64 == 12)
        #expect(decoded.fUint32 == 1000)
        #expect(decoded.fColor == .green)
        #expect(decoded.fBytes == Data([0xFB, 0xFF, 0x00]))
        #expect(decoded.fBool)
    }

    @Test func keepsUnknownEnumNumbers() throws {
        let decoded = try TestingV1.Scalars(jsonString: #"{"fColor": 42}"#)
        #expect(decoded.fColor == .unrecognized(42))
        #expect(try decoded.jsonString() == #"{"fColor":42}"#)
        #expect(try TestingV1.Scalars(serializedBytes: decoded.serializedBytes()).fColor == .unrecognized(42))
    }

    @Test func aDoubleMayBeAStringInJSONNumberForm() throws {
        for (text, value) in [("1.5e3", 1500.0), ("-0.25", -0.25), ("7", 7.0), ("1E-2", 0.01)] {
            #expect(try TestingV1.Scalars(jsonString: #"{"fDouble": "\#(text)"}"#).fDouble == value)
        }
    }

    @Test func nullMeansDefault() throws {
        #expect(try TestingV1.Scalars(jsonString: #"{"fInt32": null, "fString": null}"#) == TestingV1.Scalars())
    }

    @Test(arguments: [
        (#"{"nope": 1}"#, #"unknown field "nope" in tokenet.testing.v1.Scalars (its fields: fDouble, fFloat, "#),
        // A name close to a field's is named with it: a slip, or part of the name.
        (#"{"fInt3": 1}"#, #"unknown field "fInt3" in tokenet.testing.v1.Scalars; did you mean "fInt32"?"#),
        (#"{"fstrng": "x"}"#, #"did you mean "fString"?"#),
        (#"{"fInt32": 1, "f_int32": 2}"#, #"field "f_int32" appears twice"#),
        (#"{"fInt32": 2147483648}"#, "tokenet.testing.v1.Scalars.f_int32: 2147483648 is out of range"),
        (#"{"fInt32": 1.5}"#, "1.5 is not a whole number"),
        (#"{"fUint64": -1}"#, "-1 is out of range (0 to 2^64-1)"),
        (#"{"fBool": "true"}"#, "expected true or false"),
        (#"{"fString": 5}"#, "expected a string, found a number"),
        (#"{"fBytes": "%%%"}"#, "expected base64"),
        (
            #"{"fColor": "PURPLE"}"#,
            // In the order of their numbers, as protobuf-c keeps them (COLOR_BLUE is -3).
            #""PURPLE" is not a value of tokenet.testing.v1.Color (its values: COLOR_BLUE, COLOR_UNSPECIFIED, "#
                + "COLOR_RED, COLOR_GREEN)"
        ),
        // An element of a repeated field is named by its index.
        (#"{"fInt32": 1, "fBytes": 5}"#, "f_bytes: expected base64 text, found a number"),
        // Names with a NUL: protobuf-c's lookups stop at it and found the field or value named by what precedes it.
        (#"{"f_int32\u0000x": 5}"#, "unknown field \"f_int32\u{0}x\" in tokenet.testing.v1.Scalars"),
        (#"{"fColor": "COLOR_RED\u0000x"}"#, "\"COLOR_RED\u{0}x\" is not a value of tokenet.testing.v1.Color"),
        (#"{"fString": "a\u0000b"}"#, "f_string: a string cannot hold a NUL character"),
        (#"{"fString": "\u0000"}"#, "f_string: a string cannot hold a NUL character"),
        (#"{"fFloat": 1e300}"#, "out of range for a float"),
        (#"{"fDouble": "0x10"}"#, #""0x10" is not a number"#),
        (#"{"fDouble": "+1"}"#, #""+1" is not a number"#),
        (#"{"fDouble": "inf"}"#, #""inf" is not a number"#),
        (#"{"fDouble": " 1.5"}"#, #"" 1.5" is not a number"#),
        (#"{"fDouble": 1e309}"#, "f_double: 1e309 is out of range for a double"),
        (#"{"fDouble": "-1e309"}"#, #"f_double: "-1e309" is out of range for a double"#),
        (#"[1]"#, "expected an object for tokenet.testing.v1.Scalars, found an array"),
        (#"{"fInt32": 1"#, "unexpected end of JSON"),
        (#"{"fInt32": 01}"#, "leading zero"),
        (#"{} x"#, "unexpected text after the JSON value"),
        (#"{"fInt32": 1, }"#, "trailing comma before '}' at byte 12"),
        (#"[1, ]"#, "trailing comma before ']' at byte 2"),
        ("x", "unexpected character 'x' at byte 0"),
        // Other bytes are named by value: a control character written out acts on the terminal.
        ("\u{1B}[2J", "unexpected byte 27 at byte 0"),
        (#"{"fInt32": \#u{7F}}"#, "unexpected byte 127 at byte 11"),
        ("é", "unexpected byte 195 at byte 0"),
        (#"{"fString": "\x"}"#, "invalid escape '\\x'"),
        (#"{"fString": "\é"}"#, "invalid escape: a backslash before byte 195"),
    ])
    func rejectsWithAMessageNamingTheProblem(json: String, expected: String) {
        do {
            _ = try TestingV1.Scalars(jsonString: json)
            Issue.record("accepted \(json)")
        } catch let error as WireError {
            #expect(error.code == .invalidJSON)
            #expect(error.message.contains(expected), "message was: \(error.message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    /// The element of a repeated field that does not fit is named by its index: which one was wrong was not said.
    @Test func aRepeatedFieldsElementIsNamedByItsIndex() {
        #expect {
            try TestingV1.Repeated(jsonString: #"{"rInt64": ["1", "x", "3"]}"#)
        } throws: { error in
            (error as? WireError)?.message.hasPrefix(#"tokenet.testing.v1.Repeated.r_int64[1]: "x" is not"#) == true
        }
    }

    static let base64Texts: [(String, [UInt8])] = [
        ("Zm9v", [0x66, 0x6F, 0x6F]), ("Zm8=", [0x66, 0x6F]), ("Zm8", [0x66, 0x6F]), ("Zg==", [0x66]), ("Zg", [0x66]),
        ("+/8A", [0xFB, 0xFF, 0x00]), ("-_8A", [0xFB, 0xFF, 0x00]), ("_w==", [0xFF]), ("_w", [0xFF]), ("", []),
    ]

    @Test(arguments: base64Texts)
    func readsBase64InEitherAlphabetWithOrWithoutPadding(text: String, bytes: [UInt8]) throws {
        #expect(try TestingV1.Scalars(jsonString: #"{"fBytes": "\#(text)"}"#).fBytes == Data(bytes))
    }

    /// `=` only pads the end, to a multiple of four characters: a reader that skipped it anywhere took `"===="` as a
    /// zero byte, `"AA=A"` as two and `"Zm9v=="` as `foo`.
    /// Each refusal says what is wrong: it said "expected base64 text" alone.
    @Test(arguments: [
        ("=", "padded base64 comes in groups of four characters, and this is 1 long"),
        ("==", "padded base64 comes in groups of four characters, and this is 2 long"),
        ("====", "4 '=' at the end; padding is one or two"), ("A===", "3 '=' at the end; padding is one or two"),
        ("AA=A", "'=' pads only the end (at character 3;"), ("=AAA", "'=' pads only the end (at character 1;"),
        ("Zg=", "padded base64 comes in groups of four characters, and this is 3 long"),
        ("Zm9vYg=", "padded base64 comes in groups of four characters, and this is 7 long"),
        ("Zm9v==", "padded base64 comes in groups of four characters, and this is 6 long"),
        ("AAAA====", "4 '=' at the end"),
        ("Zm9=vYg", "'=' pads only the end (at character 4;"),
        ("AAAAA", "5 characters is no length of base64 (one too many, or a character missing)"),
        ("Zm9v Yg==", "a space is no base64 character (at character 5;"),
        (#"Zm9v\nYg=="#, "a control character (byte 10) is no base64 character (at character 5;"),
        ("Zm9v.Yg", "'.' is no base64 character (at character 5; base64 is A-Z, a-z, 0-9 and + / or - _"),
        // What follows the padding is what is out of place, not the padding.
        (#"AQ==\n"#, "a control character (byte 10) is no base64 character after the padding (at character 5;"),
        ("AQ== ", "a space is no base64 character after the padding (at character 5;"),
        ("AQ==.", "'.' is no base64 character after the padding (at character 5;"),
        ("AQ==x", "'=' pads only the end (at character 3;"),
    ])
    func rejectsTextThatIsNotBase64(text: String, problem: String) {
        do {
            let decoded = try TestingV1.Scalars(jsonString: #"{"fBytes": "\#(text)"}"#)
            Issue.record("accepted \(text) as \(decoded.fBytes.map { $0 })")
        } catch let error as WireError {
            #expect(
                error.message.hasPrefix("tokenet.testing.v1.Scalars.f_bytes: expected base64 text: \(problem)"),
                "\(error.message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    static let messageFieldsNotObjects: [(String, any ProtoMessage.Type, String)] = [
        (#"{"rScalars": [{}, null]}"#, TestingV1.Repeated.self, "tokenet.testing.v1.Repeated.r_scalars[1]"),
        (#"{"maybeMessage": []}"#, TestingV1.Presence.self, "tokenet.testing.v1.Presence.maybe_message"),
    ]

    /// A message field given something other than an object is named, not only its type: several fields may hold
    /// one message type, and a repeated field's elements all do.
    @Test(arguments: messageFieldsNotObjects)
    func aMessageFieldThatIsNotAnObjectIsNamed(json: String, type: any ProtoMessage.Type, field: String) {
        do {
            _ = try type.init(jsonString: json)
            Issue.record("accepted \(json)")
        } catch let error as WireError {
            #expect(error.code == .invalidJSON)
            #expect(error.message.hasPrefix("\(field): expected an object for tokenet.testing.v1.Scalars, found "))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func rejectsTwoMembersOfOneOneof() {
        #expect(throws: WireError.self) { try TestingV1.Choice(jsonString: #"{"number": "1", "text": "x"}"#) }
    }

    @Test func rejectsDeepNestingWithoutCrashing() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: WireError.self) { try TestingV1.Scalars(jsonString: deep) }
    }

    @Test func rejectsNULInStringsWhenEncoding() {
        let scalars = TestingV1.Scalars(fString: "a\u{0}b")
        #expect(
            throws: WireError(
                .unencodableValue, #"string field "tokenet.testing.v1.Scalars.f_string" contains a NUL character"#)
        ) {
            try scalars.serializedBytes()
        }
    }

    @Test func readsEscapesAndSurrogatePairs() throws {
        let decoded = try TestingV1.Scalars(jsonString: #"{"fString": "\u00e9\ud83d\udcb3\n\/"}"#)
        #expect(decoded.fString == "é💳\n/")
    }
}

/// Binary decoding failures are errors, never crashes.
@Suite struct BinaryDecodingTests {
    @Test func garbageIsAnInvalidMessage() {
        let garbage: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
        #expect(throws: WireError.self) { try WireV1.Frame(serializedBytes: garbage) }
    }

    @Test func truncatedMessageIsAnInvalidMessage() throws {
        let frame = WireV1.Frame(streamID: 3, kind: .callStart(.init(method: "/tokenet.health.v1.Health/Check")))
        let bytes = try frame.serializedBytes()
        // Bytes 0-1 are the complete stream_id field, and a message cut between fields is a valid shorter message;
        // every other cut falls inside a field.
        for length in [1] + Array(3..<bytes.count) {
            do {
                let decoded = try WireV1.Frame(serializedBytes: Array(bytes[..<length]))
                Issue.record("a \(length)-byte prefix decoded to \(decoded)")
            } catch let error as WireError {
                #expect(error.code == .invalidMessage)
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }
    }

    @Test func invalidUTF8InAStringIsAnInvalidMessage() {
        // Field 14 (f_string), wire type 2, length 2, bytes 0xC3 0x28 (an invalid UTF-8 sequence).
        let bytes: [UInt8] = [0x72, 0x02, 0xC3, 0x28]
        #expect(throws: WireError.self) { try TestingV1.Scalars(serializedBytes: bytes) }
    }
}

/// Integers are read exactly from their decimal text, as a JSON number or as a string: a fraction or an exponent is
/// fine while the value stays whole, and anything else is refused with the field's name and the reason.
@Suite struct ProtoJSONIntegerTests {
    @Test(arguments: [
        ("f_int64", "0", TestingV1.Scalars()),
        ("f_int64", "-0", TestingV1.Scalars()),
        ("f_int64", "0.000e-7", TestingV1.Scalars()),
        ("f_int64", "9007199254740993", TestingV1.Scalars(fInt64: 9_007_199_254_740_993)),
        ("f_int64", "9007199254740993e0", TestingV1.Scalars(fInt64: 9_007_199_254_740_993)),
        ("f_int64", "9007199254740993.0", TestingV1.Scalars(fInt64: 9_007_199_254_740_993)),
        ("f_int64", "-9007199254740993.00E0", TestingV1.Scalars(fInt64: -9_007_199_254_740_993)),
        ("f_int64", "9223372036854775807", TestingV1.Scalars(fInt64: .max)),
        ("f_int64", "9223372036854775807.0", TestingV1.Scalars(fInt64: .max)),
        ("f_int64", "92233720368547758.07e2", TestingV1.Scalars(fInt64: .max)),
        ("f_int64", "-9223372036854775808", TestingV1.Scalars(fInt64: .min)),
        ("f_int64", "-922337203685477580800e-2", TestingV1.Scalars(fInt64: .min)),
        ("f_sint64", "-9223372036854775807", TestingV1.Scalars(fSint64: .min + 1)),
        ("f_sfixed64", "9223372036854775806", TestingV1.Scalars(fSfixed64: .max - 1)),
        ("f_uint64", "18446744073709551615", TestingV1.Scalars(fUint64: .max)),
        ("f_uint64", "1844674407370955161.5e1", TestingV1.Scalars(fUint64: .max)),
        ("f_uint64", "-0", TestingV1.Scalars()),
        ("f_fixed64", "18446744073709551614", TestingV1.Scalars(fFixed64: .max - 1)),
        ("f_int32", "2147483647", TestingV1.Scalars(fInt32: .max)),
        ("f_int32", "-2147483648", TestingV1.Scalars(fInt32: .min)),
        ("f_int32", "1e2", TestingV1.Scalars(fInt32: 100)),
        ("f_int32", "1E+2", TestingV1.Scalars(fInt32: 100)),
        ("f_int32", "1.0", TestingV1.Scalars(fInt32: 1)),
        ("f_int32", "0.1e1", TestingV1.Scalars(fInt32: 1)),
        ("f_int32", "12300e-2", TestingV1.Scalars(fInt32: 123)),
        ("f_sint32", "-2147483647", TestingV1.Scalars(fSint32: .min + 1)),
        ("f_sfixed32", "-7", TestingV1.Scalars(fSfixed32: -7)),
        ("f_uint32", "4294967295", TestingV1.Scalars(fUint32: .max)),
        ("f_fixed32", "4294967294", TestingV1.Scalars(fFixed32: .max - 1)),
    ])
    func readsTheExactValue(member: String, text: String, expected: TestingV1.Scalars) throws {
        #expect(try TestingV1.Scalars(jsonString: #"{"\#(member)": \#(text)}"#) == expected)
        #expect(try TestingV1.Scalars(jsonString: #"{"\#(member)": "\#(text)"}"#) == expected)
    }

    @Test(arguments: [
        ("f_int64", "-9223372036854775809", "is out of range (-2^63 to 2^63-1)"),
        ("f_int64", "9223372036854775808", "is out of range"),
        ("f_int64", "9223372036854775808.0", "is out of range"),
        ("f_int64", "1e19", "is out of range"),
        ("f_int64", "1e400", "is out of range"),
        ("f_int64", "1e99999999999999999999", "is out of range"),
        ("f_sfixed64", "-9223372036854775809", "is out of range"),
        ("f_uint64", "18446744073709551616", "is out of range (0 to 2^64-1)"),
        ("f_uint64", "-1", "is out of range"),
        ("f_fixed64", "-1e0", "is out of range"),
        ("f_int32", "2147483648", "is out of range (-2147483648 to 2147483647)"),
        ("f_int32", "-2147483649", "is out of range"),
        ("f_sint32", "2147483648", "is out of range"),
        ("f_uint32", "4294967296", "is out of range (0 to 4294967295)"),
        ("f_int64", "9007199254740993.5", "is not a whole number"),
        ("f_int64", "9223372036854775807.5", "is not a whole number"),
        ("f_int32", "1.5", "is not a whole number"),
        ("f_int32", "1e-1", "is not a whole number"),
        ("f_int32", "1e-400", "is not a whole number"),
        ("f_uint32", "0.5", "is not a whole number"),
    ])
    func rejectsAValueThatIsNotAnIntegerOfTheFieldsType(member: String, text: String, reason: String) {
        expectRejection(#"{"\#(member)": \#(text)}"#, "tokenet.testing.v1.Scalars.\(member): \(text) \(reason)")
        expectRejection(#"{"\#(member)": "\#(text)"}"#, "tokenet.testing.v1.Scalars.\(member): \"\(text)\" \(reason)")
    }

    @Test func readsAnEnumNumberLikeAnInt32() throws {
        #expect(try TestingV1.Scalars(jsonString: #"{"fColor": 2.0}"#).fColor == .green)
        expectRejection(#"{"fColor": 2147483648}"#, "f_color: 2147483648 is out of range (-2147483648 to 2147483647)")
        expectRejection(#"{"fColor": 2.5}"#, "f_color: 2.5 is not a whole number")
    }

    /// Text that `Int64(_:)` or `Double(_:)` would take but that is not a proto3 JSON integer.
    @Test(arguments: [
        ("f_int64", "0x10"), ("f_int64", "0x1p4"), ("f_int32", "01"), ("f_int32", "-01"), ("f_int32", "00"),
        ("f_int32", " 1"), ("f_int32", "1 "), ("f_int32", "+1"), ("f_int32", "1e+"), ("f_int32", "1."),
        ("f_int32", ".5"), ("f_int32", "-"), ("f_int32", ""), ("f_int32", "1_000"), ("f_uint64", "inf"),
        ("f_uint64", "Infinity"), ("f_uint64", "NaN"), ("f_uint64", "1e"),
    ])
    func rejectsAStringThatIsNotDecimalDigits(member: String, text: String) {
        expectRejection(
            #"{"\#(member)": "\#(text)"}"#, "tokenet.testing.v1.Scalars.\(member): \"\(text)\" is not a decimal integer"
        )
    }

    private func expectRejection(_ json: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation)
    {
        do {
            let decoded = try TestingV1.Scalars(jsonString: json)
            Issue.record("accepted \(json) as \(decoded)", sourceLocation: sourceLocation)
        } catch let error as WireError {
            #expect(error.code == .invalidJSON, sourceLocation: sourceLocation)
            #expect(error.message.contains(expected), "message was: \(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
    }
}
