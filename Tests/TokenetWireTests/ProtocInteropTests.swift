import Foundation
import Testing
import TokenetTransport
import TokenetWire

/// The frame codec against an independent protobuf implementation: Debian's `protoc` (protobuf-compiler).
///
/// protobuf-c encodes and decodes our messages, so these tests check both ends against code we did not write:
/// bytes we frame must read as the right fields in protoc's text format, and protoc's bytes must read as the
/// right Swift value.
@Suite(.enabled(if: Protoc.path != nil, "protoc not found on PATH; install protobuf-compiler to run interop tests"))
struct ProtocInteropTests {
    @Test func protocReadsOurCallStart() throws {
        let framed = try FrameEncoder().encode(FrameSamples.callStart)
        let body = Data(framed.dropFirst(FrameFormat.lengthPrefixSize))
        let text = try Protoc.run(["--decode=tokenet.wire.v1.Frame"], input: body)
        #expect(
            String(decoding: text, as: UTF8.self) == """
                stream_id: 1
                call_start {
                  method: "/tokenet.health.v1.Health/Check"
                  metadata {
                    key: "tokenet-request-id"
                    text: "r-42"
                  }
                  metadata {
                    key: "trace-bin"
                    binary: "\\001\\002\\377"
                  }
                  timeout_micros: 2500000
                }

                """
        )
    }

    @Test func ourDecoderReadsProtocsCallStart() throws {
        let text = """
            stream_id: 1
            call_start {
              method: "/tokenet.health.v1.Health/Check"
              metadata { key: "tokenet-request-id" text: "r-42" }
              metadata { key: "trace-bin" binary: "\\001\\002\\377" }
              timeout_micros: 2500000
            }
            """
        let body = try Protoc.run(["--encode=tokenet.wire.v1.Frame"], input: Data(text.utf8))
        let length = UInt32(body.count)
        var decoder = FrameDecoder()
        decoder.feed([UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
        decoder.feed(body)
        #expect(try decoder.nextFrame() == FrameSamples.callStart)
        #expect(decoder.bufferedByteCount == 0)
    }

    /// Every kind of frame: our bytes → protoc text → protoc bytes → our decoder gives the frame back.
    @Test(arguments: FrameSamples.oneOfEachKind.indices)
    func roundTripThroughProtoc(index: Int) throws {
        let frame = FrameSamples.oneOfEachKind[index]
        let framed = try FrameEncoder().encode(frame)
        let text = try Protoc.run(["--decode=tokenet.wire.v1.Frame"], input: Data(framed.dropFirst(4)))
        let body = try Protoc.run(["--encode=tokenet.wire.v1.Frame"], input: text)
        let length = UInt32(body.count)
        var decoder = FrameDecoder()
        decoder.feed([UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
        decoder.feed(body)
        #expect(try decoder.nextFrame() == frame, "protoc text: \(String(decoding: text, as: UTF8.self))")
    }
}

/// Runs Debian's `protoc` on Protos/tokenet/wire/v1/frame.proto.
enum Protoc {
    static let path: String? = {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        return directories.map { "\($0)/protoc" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// The repository root, three levels up from this file (Tests/TokenetWireTests/ProtocInteropTests.swift).
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// protoc's standard output for `arguments` with `input` on its standard input.
    static func run(_ arguments: [String], input: Data) throws -> Data {
        let path = try #require(path)
        let inputFile = FileManager.default.temporaryDirectory
            .appendingPathComponent("tokenet-protoc-\(UUID().uuidString)")
        try input.write(to: inputFile)
        defer { try? FileManager.default.removeItem(at: inputFile) }

        let process = try SpawnedProcess(
            path,
            arguments + ["-I", repositoryRoot.appendingPathComponent("Protos").path, "tokenet/wire/v1/frame.proto"],
            standardInput: .file(inputFile.path), standardOutput: .pipe, standardError: .pipe)
        let result = process.standardOutput!.readDataToEndOfFile()
        let message = process.standardError!.readDataToEndOfFile()
        let termination = process.waitUntilExit(killingAfter: 60)
        guard termination.isCleanExit else {
            throw Failure(
                description: "protoc \(arguments) \(termination): "
                    + String(decoding: message, as: UTF8.self)
            )
        }
        return result
    }
}
