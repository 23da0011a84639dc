import Foundation
import Testing
import TokenetWire

@testable import TokenetRPC

/// Metadata is kept in its wire form; what it reads and compares must be what was added or received.
@Suite struct MetadataTests {
    @Test func addedEntriesTravelAsTheyWereAdded() {
        var metadata: Metadata = ["X-Card-Scheme": "visa"]
        metadata.add("blob", .binary(Data([0, 1, 2])))
        metadata.add("x-card-scheme", .text("mastercard"))
        #expect(metadata[text: "x-card-scheme"] == "visa")
        #expect(metadata.entries.map(\.key) == ["x-card-scheme", "blob", "x-card-scheme"])
        #expect(
            metadata.wire == [
                WireV1.MetadataEntry(key: "x-card-scheme", value: .text("visa")),
                WireV1.MetadataEntry(key: "blob", value: .binary(Data([0, 1, 2]))),
                WireV1.MetadataEntry(key: "x-card-scheme", value: .text("mastercard")),
            ])
        metadata.set("X-CARD-SCHEME", .text("amex"))
        #expect(metadata.entries.count == 2 && metadata[text: "x-card-scheme"] == "amex")
    }

    /// A reserved key is named as an invalid one is, quoted and cut short; `tokenet call -H` with a long `tokenet-` key
    /// used to get all of it back in the INVALID_ARGUMENT message.
    @Test func aLongReservedKeyIsCutShortInTheProblem() throws {
        var metadata = Metadata()
        metadata.add("tokenet-" + String(repeating: "a", count: 100_000), .text("x"))
        let problem = try #require(metadata.problem)
        #expect(problem.hasPrefix("metadata key \"tokenet-aaa"), "\(problem.prefix(300))")
        #expect(problem.contains("\" (cut short) uses the prefix tokenet-"), "\(problem.prefix(300))")
        #expect(problem.utf8.count < 300, "\(problem.prefix(300))")
    }

    @Test func receivedEntriesKeepTheirKeysAndAnEmptyValueReadsAsText() {
        let metadata = Metadata(wire: [
            WireV1.MetadataEntry(key: "tenant", value: .text("acme")),
            WireV1.MetadataEntry(key: "empty", value: nil),
            WireV1.MetadataEntry(key: Metadata.traceIDKey, value: .text("a1b2c3d4e5f60718")),
        ])
        #expect(metadata[text: "tenant"] == "acme")
        #expect(metadata[text: "empty"] == "")
        #expect(metadata.traceID == "a1b2c3d4e5f60718")
        var added = Metadata()
        added.add("tenant", .text("acme"))
        added.add("empty", .text(""))
        added.add(Metadata.traceIDKey, .text("a1b2c3d4e5f60718"))
        #expect(metadata == added && metadata.hashValue == added.hashValue)
    }

    /// A text value with a control character (a line break would forge a log line where a handler logs it) is
    /// refused, naming the key and not the value, as the CLI refuses to send one; printable text in any script,
    /// and any bytes under a `-bin` key, are served.
    @Test(arguments: ["two\nlines", "cr\r", "tab\t", "nul\u{0}", "del\u{7F}", "c1\u{85}", "ls\u{2028}", "ps\u{2029}"])
    func aTextValueWithAControlCharacterIsRefused(value: String) {
        let metadata = Metadata(wire: [WireV1.MetadataEntry(key: "x-note", value: .text(value))])
        #expect(
            metadata.problem == "the value of metadata key \"x-note\" holds a control character or line separator (a "
                + "line break, a tab…): text values are printable text, and bytes go in a key ending in -bin")
        for fine: WireV1.MetadataEntry.Value in [.text("Größe ß ✓ 東京"), .binary(Data("two\nlines".utf8))] {
            #expect(Metadata(wire: [WireV1.MetadataEntry(key: "x-note-bin", value: fine)]).problem == nil)
        }
        #expect(Metadata(wire: [WireV1.MetadataEntry(key: "x-note", value: .text("Größe ✓"))]).problem == nil)
    }

    /// A peer that sends a key in uppercase breaks the protocol (keys are lowercase): its call is refused, and the
    /// message names the key as sent. The key was once lowercased on receipt, and the call served.
    @Test func aReceivedUppercaseKeyIsRefused() {
        let metadata = Metadata(wire: [WireV1.MetadataEntry(key: "X-Tenant", value: .text("acme"))])
        #expect(metadata.entries.map(\.key) == ["X-Tenant"])
        #expect(metadata.problem?.contains("metadata key \"X-Tenant\" is not valid") == true)
        #expect(Metadata(wire: [WireV1.MetadataEntry(key: "x-tenant", value: .text("acme"))]).problem == nil)
    }

    /// A call with two different trace ids is refused: which one its log lines and onward calls took depended on
    /// the reader. The same id twice is one flow, and served.
    @Test func twoDifferentTraceIDsAreRefused() {
        let first = WireV1.MetadataEntry(key: Metadata.traceIDKey, value: .text("a1b2c3d4e5f60718"))
        let second = WireV1.MetadataEntry(key: Metadata.traceIDKey, value: .text("b1b2c3d4e5f60718"))
        #expect(
            Metadata(wire: [first, second]).problem
                == "the call carries two different tokenet-trace-id values: a call belongs to one flow, so send one")
        #expect(Metadata(wire: [first, first]).problem == nil)
        #expect((try? Metadata(wire: [first, first]).checked().get()) == "a1b2c3d4e5f60718")
    }

    @Test func settingTheTraceIDReplacesTheOneThereAndKeepsTheRest() {
        var metadata: Metadata = ["tenant": "acme"]
        #expect(metadata.traceID == nil)
        metadata.setTraceID("a1b2c3d4e5f6071")
        metadata.set("TOKENET-TRACE-ID", .text("b2c3d4e5f607182"))
        metadata.setTraceID("c3d4e5f60718293")
        #expect(metadata.traceID == "c3d4e5f60718293")
        #expect(metadata.entries.map(\.key) == ["tenant", Metadata.traceIDKey])
        #expect(metadata[text: "tenant"] == "acme")
    }
}

/// The one-pass key check the server runs on every call, against the rules it stands for.
@Suite struct MetadataKeyKindTests {
    @Test(arguments: [
        ("", Metadata.KeyKind.invalid), ("x-tenant", .application), ("a.b_c-9", .application),
        ("tokenet", .application), ("tokenet_x", .application), ("tokenet-", .reserved),
        ("tokenet-trace-id", .traceID), ("tokenet-trace-ie", .reserved), ("tokenet-trace-idx", .reserved),
        ("tokenet-anything", .reserved), ("Tokenet-x", .invalid),
        ("x tenant", .invalid), ("café", .invalid), ("tokenet-é", .invalid),
        (String(repeating: "k", count: 40), .application), ("tokenet-" + String(repeating: "k", count: 40), .reserved),
    ])
    func keysAreSortedByTheirBytes(key: String, kind: Metadata.KeyKind) {
        #expect(Metadata.kind(of: key) == kind)
        #expect(Metadata.isValidKey(key) == (kind != .invalid))
    }

    /// Trace ids of 15 digits are small strings, stored inline; 32-digit ones live on the heap. Both forms are read.
    @Test(arguments: [
        ("a1b2c3d4e5f6071", true), (String(repeating: "ab12", count: 8), true), ("1234567890123", false),
        ("abcd123", false), (String(repeating: "a", count: 33), false), ("a1b2c3d4e5f6071G", false),
        ("a1b2c3d4e5f6071\u{0}", false), ("", false),
    ])
    func traceIDsAreCheckedInEitherStringForm(id: String, valid: Bool) {
        #expect(Metadata.isValidTraceID(id) == valid)
    }

    /// The server's one-pass check reads the trace id as `traceID` does (the first one), and refuses what `problem`
    /// names.
    @Test func theOnePassCheckAgreesWithTraceIDAndProblem() throws {
        let cases: [[WireV1.MetadataEntry]] = [
            [],
            [WireV1.MetadataEntry(key: "tenant", value: .text("acme"))],
            [
                WireV1.MetadataEntry(key: "tenant", value: .text("acme")),
                WireV1.MetadataEntry(key: Metadata.traceIDKey, value: .text("a1b2c3d4e5f6071")),
                WireV1.MetadataEntry(key: Metadata.traceIDKey, value: .text("a1b2c3d4e5f6071")),
            ],
            [
                WireV1.MetadataEntry(key: Metadata.traceIDKey, value: .text("a1b2c3d4e5f6071")),
                WireV1.MetadataEntry(key: Metadata.traceIDKey, value: .text("b1b2c3d4e5f6071")),
            ],
            [WireV1.MetadataEntry(key: Metadata.traceIDKey, value: .text("1234567890123"))],
            [WireV1.MetadataEntry(key: Metadata.traceIDKey, value: .binary(Data([1])))],
            [WireV1.MetadataEntry(key: "tokenet-other", value: .text("x"))],
            [WireV1.MetadataEntry(key: "Tenant", value: .text("x"))],
        ]
        for wire in cases {
            let metadata = Metadata(wire: wire)
            switch metadata.checked() {
            case .success(let traceID):
                #expect(metadata.problem == nil)
                #expect(traceID == metadata.traceID)
            case .failure(let refusal):
                #expect(metadata.problem == refusal.message)
            }
        }
        #expect(try Metadata(wire: cases[2]).checked().get() == "a1b2c3d4e5f6071")
        #expect(Metadata(wire: cases[3]).problem?.contains("two different tokenet-trace-id values") == true)
        #expect(Metadata(wire: cases[4]).problem?.hasPrefix("tokenet-trace-id must be 8 to 32") == true)
        #expect(Metadata(wire: cases[6]).problem?.contains("uses the prefix tokenet-") == true)
    }
}
