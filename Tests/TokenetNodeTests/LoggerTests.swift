import Foundation
import Testing

@testable import TokenetNode

@Suite struct LoggerTests {
    static let instant = Date(timeIntervalSince1970: 1_796_012_750.123)

    func logger(level: LogLevel = .info, format: LogFormat = .text, sink: MemoryLogSink) -> Logger {
        Logger(node: "tsp-node", level: level, format: format, sink: sink, clock: { LoggerTests.instant })
    }

    @Test func textLineCarriesTimestampLevelNodeMessageAndFields() {
        let sink = MemoryLogSink()
        logger(sink: sink).withTraceID("t-42").info("ready", ["listen": "127.0.0.1:7001", "note": "two words"])
        #expect(
            sink.lines == [
                #"2026-11-30T04:25:50.123Z info    tsp-node: ready listen=127.0.0.1:7001 note="two words" trace_id=t-42"#
            ])
    }

    /// A peer's 100 KB value made a 100 KB log line on every call; a line now shows at most 4096 characters of its
    /// message and 1024 of each field, and says how much it left out. A card number on the cut is still masked.
    @Test(arguments: LogFormat.allCases)
    func longMessagesAndFieldsAreCut(format: LogFormat) throws {
        let sink = MemoryLogSink()
        let pan = "4761000010000009"
        // The field's cut falls after the number's sixth digit.
        let long = String(repeating: "x", count: 1017) + " \(pan) " + String(repeating: "y", count: 100_000)
        logger(format: format, sink: sink).info(long, ["account": long])
        let line = try #require(sink.lines.first)
        #expect(line.utf8.count < 6_000, "\(line.utf8.count) bytes")
        #expect(!line.contains(pan) && !line.contains("476100"), "\(line.suffix(100))")
        #expect(line.contains("x ******… (100011 more characters)"), "\(line.suffix(100))")
        let message = "\(String(repeating: "y", count: 4096 - 1035))… (\(long.count - 4096) more characters)"
        #expect(line.contains(message + (format == .text ? " account=" : #"",""#)))
    }

    @Test func levelsBelowTheThresholdAreDropped() {
        let sink = MemoryLogSink()
        let log = logger(level: .warning, sink: sink)
        log.trace("t")
        log.debug("d")
        log.info("i")
        log.warning("w")
        log.error("e")
        #expect(sink.lines.count == 2)
        #expect(sink.lines[0].contains(" warning tsp-node: w"))
        #expect(sink.lines[1].contains(" error   tsp-node: e"))
    }

    @Test func jsonLineIsOneParseableObject() throws {
        let sink = MemoryLogSink()
        logger(format: .json, sink: sink).withTraceID("t-1").info(
            "said \"hi\"\nthen left", ["peer": "issuer", "msg": "shadowed"])
        let line = try #require(sink.lines.first)
        #expect(!line.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(
            object == [
                "ts": "2026-11-30T04:25:50.123Z", "level": "info", "node": "tsp-node",
                "msg": "said \"hi\"\nthen left", "peer": "issuer", "field_msg": "shadowed", "trace_id": "t-1",
            ])
    }

    @Test(arguments: LogFormat.allCases)
    func cardNumbersNeverReachTheSink(format: LogFormat) {
        let sink = MemoryLogSink()
        logger(format: format, sink: sink).warning("declined 4111111111111111", ["pan": "5500-0000-0000-0004"])
        let line = sink.lines.joined()
        #expect(!line.contains("4111111111111111"))
        #expect(!line.contains("5500-0000-0000"))
        #expect(line.contains("************1111"))
        #expect(line.contains("****-****-****-0004"))
    }

    @Test func controlCharactersAreEscapedInText() {
        #expect(LogRecord.textValue("a\u{1}b") == #""a\u0001b""#)
        #expect(LogRecord.jsonString("a\u{1}b") == #""a\u0001b""#)
        #expect(LogRecord.textValue("") == #""""#)
        #expect(LogRecord.textValue("x=y") == #""x=y""#)
    }

    /// What a terminal would act on (an escape sequence, DEL, C1 controls) or not show (a zero-width space, a
    /// right-to-left override) is written as an escape, in the message and in field values, in both formats.
    @Test(arguments: LogFormat.allCases)
    func invisibleCharactersAreEscaped(format: LogFormat) {
        let sink = MemoryLogSink()
        logger(format: format, sink: sink).warning(
            "peer said \u{1B}[2Jhi\u{7F}", ["reason": "a\u{200B}b\u{202E}c\u{85}d", "tag": "x\u{E0041}"])
        let line = sink.lines.joined()
        for raw in ["\u{1B}", "\u{7F}", "\u{200B}", "\u{202E}", "\u{85}", "\u{E0041}"] {
            #expect(!line.contains(raw), "\(line.debugDescription)")
        }
        for escaped in ["\\u001b[2Jhi\\u007f", "a\\u200bb\\u202ec\\u0085d", "x\\udb40\\udc41"] {
            #expect(line.contains(escaped), "\(line)")
        }
    }

    /// A card number split by characters a log escapes or hides is still masked.
    @Test(arguments: LogFormat.allCases)
    func cardNumbersSplitByInvisibleCharactersAreMasked(format: LogFormat) {
        let sink = MemoryLogSink()
        logger(format: format, sink: sink).info(
            "card 4111\u{7F}1111\u{7F}1111\u{7F}1111", ["problem": "4111\u{200B}1111\u{200B}1111\u{200B}1111"])
        let line = sink.lines.joined()
        #expect(line.contains("****\\u007f****\\u007f****\\u007f1111"), "\(line)")
        #expect(line.contains("****\\u200b****\\u200b****\\u200b1111"), "\(line)")
        #expect(!line.contains("4111"), "\(line)")
    }
}
