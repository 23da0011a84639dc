import Testing

@testable import TokenetTransport

@Suite struct PassThroughEngineTests {
    @Test func isEstablishedAtOnceWithoutAPeer() throws {
        let engine = PassThroughEngine()
        #expect(try engine.handshake() == .complete)
        #expect(engine.peer == nil)
        #expect(try engine.readPlaintext(maxCount: 16) == .needsMoreData)
    }

    @Test func receivedBytesComeOutUnchangedInSlicesThenEOFCloses() throws {
        let engine = PassThroughEngine()
        let bytes = pattern(40, seed: 3)
        bytes.withUnsafeBytes { engine.receiveCiphertext($0) }
        #expect(try engine.readPlaintext(maxCount: 16) == .plaintext(Array(bytes[0..<16])))
        #expect(try engine.readPlaintext(maxCount: 16) == .plaintext(Array(bytes[16..<32])))
        engine.receiveEOF()
        // Bytes received before end-of-file are still delivered first.
        #expect(try engine.readPlaintext(maxCount: 16) == .plaintext(Array(bytes[32...])))
        #expect(try engine.readPlaintext(maxCount: 16) == .closed)
    }

    @Test func writtenBytesAreSentUnchanged() throws {
        let engine = PassThroughEngine()
        let bytes = pattern(30, seed: 8)
        try bytes.withUnsafeBytes { try engine.writePlaintext($0) }
        #expect(engine.takeCiphertext(maxCount: 10) == Array(bytes[0..<10]))
        #expect(engine.takeCiphertext(maxCount: .max) == Array(bytes[10...]))
        #expect(engine.takeCiphertext(maxCount: .max) == [])
    }
}
