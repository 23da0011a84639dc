import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// `tokenet decode` given tshark's follow output, or files that name no one side the way it expects: each says what
/// to do, and the commands it gives work.
@Suite struct DecodeFollowTests {
    /// Both sides as `tshark -z follow,tls,hex,N` prints them: a header, then each side's bytes as a hex dump (an
    /// offset, 16 bytes, a text column), the client's lines indented with a tab, as in a capture of the CLI.
    static func followHex(client: [UInt8], server: [UInt8]) -> String {
        func dump(_ bytes: [UInt8], indent: String) -> String {
            stride(from: 0, to: bytes.count, by: 16).map { start in
                let line = Array(bytes[start..<min(start + 16, bytes.count)])
                var hex = ""
                for (index, byte) in line.enumerated() {
                    hex += String(format: "%02x ", byte) + (index == 7 ? " " : "")
                }
                let text = String(line.map { (0x20...0x7E).contains($0) ? Character(UnicodeScalar($0)) : "." })
                return indent + String(format: "%08X  ", start) + hex.padding(toLength: 50, withPad: " ", startingAt: 0)
                    + text + "\n"
            }.joined()
        }
        return "\n===================================================================\nFollow: tls,hex\n"
            + "Filter: tcp.stream eq 3\nNode 0: 127.0.0.1:41302\nNode 1: :0\n" + dump(client, indent: "\t")
            + dump(server, indent: "")
            + "===================================================================\n"
    }

    /// The hint for follow,tls,hex named `sed` and `grep` lines made for follow,tls,raw: grep kept no line, and the
    /// sed output stopped at the text column ("'.' at offset 60 is not a hex digit"). The commands it gives now are
    /// run here, and their output decodes.
    @Test func theCommandsGivenForFollowHexOutputWork() async throws {
        let directory = try TemporaryDirectory()
        let follow = directory.path("follow.txt")
        let text = Self.followHex(
            client: try DecodeCommandTests.clientSide(), server: try DecodeCommandTests.serverSide())
        try text.write(toFile: follow, atomically: true, encoding: .utf8)
        let refused = try await runTokenet(["decode", "--hex", follow])
        #expect(refused.status == 2, "\(refused.stderr)")
        let sed = "sed -n 's/^\\t//p' FILE | cut -c11-58 > one.hex"
        let grep = "grep -E '^[0-9A-Fa-f]{8}  ' FILE | cut -c11-58 > other.hex"
        #expect(refused.stderr.contains(sed) && refused.stderr.contains(grep), "\(refused.stderr)")
        let script =
            "cd '\(directory.url.path)' && "
            + [sed, grep].map { $0.replacingOccurrences(of: "FILE", with: follow) }.joined(separator: "; ")
        let split = try await offThePool { () throws -> ProcessResult in
            try LaunchedProcess(executable: URL(fileURLWithPath: "/bin/sh"), ["-c", script]).waitForExit(limit: 30)
        }
        #expect(split.status == 0, "\(split.stderr)")
        let decoded = try await runTokenet([
            "decode", "--hex", "--calls", directory.path("one.hex"), directory.path("other.hex"),
        ])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        #expect(decoded.stdout.contains("\"status\": \"SERVING_STATUS_SERVING\""), "\(decoded.stdout)")
        // One side kept with its offsets and text column is named as a hex dump, with the command that keeps the
        // bytes alone.
        let dumped = directory.path("dump.txt")
        try String(text.split(separator: "\n").filter { $0.hasPrefix("\t") }.joined(separator: "\n"))
            .write(toFile: dumped, atomically: true, encoding: .utf8)
        let dump = try await runTokenet(["decode", "--hex", dumped])
        #expect(dump.status == 2, "\(dump.stderr)")
        #expect(
            dump.stderr.contains("\(dumped) is a hex dump") && dump.stderr.contains("cut -c11-58"), "\(dump.stderr)")
    }

    /// follow,tls,raw output given without --hex said only that the file "holds text, not Tokenet frames", with
    /// exit status 1, where plain hex without --hex is told to add it (status 2).
    @Test func followOutputWithoutHexGetsTheSameGuidance() async throws {
        let directory = try TemporaryDirectory()
        let follow = directory.path("follow.txt")
        try
            ("\n===================================================================\nFollow: tls,raw\n"
            + "Filter: tcp.stream eq 5\nNode 0: 127.0.0.1:26349\nNode 1: :0\n\t0000000412020801\n00000000\n")
            .write(toFile: follow, atomically: true, encoding: .utf8)
        let result = try await runTokenet(["decode", follow])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("decode: \(follow): this is tshark's follow output, which holds both sides"),
            "\(result.stderr)")
        #expect(result.stderr.contains("sed -n 's/^\\t//p' FILE > one.hex"), "\(result.stderr)")
    }

    /// With two files, a stray byte was reported with no word of which file held it.
    @Test func aStrayByteNamesItsFile() async throws {
        let directory = try TemporaryDirectory()
        let client = directory.path("client.bin")
        try Data([0, 0, 0, 2]).write(to: URL(fileURLWithPath: client))
        let server = directory.path("server.hex")
        try "0000000412020801".write(toFile: server, atomically: true, encoding: .utf8)
        let result = try await runTokenet(["decode", "--hex", "--calls", client, server])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("decode: --hex: byte 0 at offset 0 of \(client) is not a hex digit"),
            "\(result.stderr)")
    }

    /// The server's side given as --calls and the client's as FILE: nothing decoded as a response, status 0, and no
    /// word that the --calls file started no call.
    @Test func swappedSidesAreNoted() async throws {
        let directory = try TemporaryDirectory()
        let client = directory.path("client.hex")
        let server = directory.path("server.hex")
        try DecodeCommandTests.hex(try DecodeCommandTests.clientSide()).write(
            toFile: client, atomically: true, encoding: .utf8)
        try DecodeCommandTests.hex(try DecodeCommandTests.serverSide()).write(
            toFile: server, atomically: true, encoding: .utf8)
        let result = try await runTokenet(["decode", "--hex", "--calls", server, client])
        #expect(
            result.stderr.contains(
                "decode: note: --calls \(server) holds no call_start: it is the server's side of the connection "
                    + "(were the two sides swapped?), or the client's side captured after its calls began, whose "
                    + "methods only --method can name"), "\(result.stderr)")
    }

    /// Spaced hex whose first four bytes (the frame's length) stand apart, as a person writes a frame, read as a
    /// follow dump's offset and was refused: a dump has its text column too.
    @Test func spacedHexWithItsLengthApartIsNotADump() async throws {
        let bytes = try DecodeCommandTests.clientSide()
        let hex = bytes.map { String(format: "%02x", $0) }
        let text = hex[0..<4].joined() + "  " + hex[4...].joined(separator: " ") + "\n"
        let result = try await runTokenet(["decode", "--hex"], stdin: text)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"streamId\": 1"), "\(result.stdout)")
    }
}
