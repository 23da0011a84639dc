import Foundation
import Glibc
import Synchronization
import Testing

@testable import TokenetTransport

/// The environment is passed in explicitly: mutating the real process environment would race with other tests.
@Suite struct KeyLogTests {
    let certs = CertificateFixture.shared
    static let labels: Set<String> = [
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
        "SERVER_TRAFFIC_SECRET_0", "EXPORTER_SECRET",
    ]

    func handshake(client: TLSContext, server: TLSContext) throws {
        let clientEngine = try TLSEngine(context: client)
        let serverEngine = try TLSEngine(context: server)
        for _ in 0..<10 {
            _ = try clientEngine.handshake()
            _ = try serverEngine.handshake()
            let toServer = clientEngine.takeCiphertext()
            let toClient = serverEngine.takeCiphertext()
            if toServer.isEmpty && toClient.isEmpty { break }
            serverEngine.receiveCiphertext(toServer)
            clientEngine.receiveCiphertext(toClient)
        }
        #expect(clientEngine.isHandshakeComplete && serverEngine.isHandshakeComplete)
    }

    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-keylog-\(UUID().uuidString).txt").path
    }

    @Test func secretsAreLoggedInNSSFormatWhenSSLKEYLOGFILEIsSet() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let environment = ["SSLKEYLOGFILE": path, "HOME": "/root"]
        let client = try TLSContext(configuration: certs.client(), environment: environment)
        let server = try TLSContext(configuration: certs.server(), environment: environment)
        #expect(client.keyLog?.path == path)

        try handshake(client: client, server: server)
        try handshake(client: client, server: server)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        // Five secrets per side per TLS 1.3 handshake; both sides log into the same file.
        #expect(lines.count == 20)
        for line in lines {
            let fields = line.split(separator: " ")
            #expect(fields.count == 3)
            #expect(Self.labels.contains(String(fields[0])))
            #expect(fields[1].count == 64 && fields[1].allSatisfy(\.isHexDigit))
            #expect(fields[2].count >= 64 && fields[2].allSatisfy(\.isHexDigit))
        }
    }

    /// A key log is written from the event loop's thread: a FIFO nobody reads held the start at its open, and a
    /// reader that stopped reading froze every connection of the loop once the pipe was full.
    @Test func aPipeNobodyReadsNeitherHoldsTheStartNorTheConnections() throws {
        let path = temporaryPath()
        #expect(mkfifo(path, 0o600) == 0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let environment = ["SSLKEYLOGFILE": path]
        let refusal = #expect(throws: TransportError.self) {
            _ = try TLSContext(configuration: certs.client(), environment: environment)
        }
        #expect(
            refusal?.message
                == "SSLKEYLOGFILE=\(path) is a pipe that nothing reads: start its reader (such as Wireshark) first, or "
                + "unset SSLKEYLOGFILE", "\(String(describing: refusal))")

        // A reader that opens the pipe and never reads: the pipe fills (64 KiB, about 300 handshakes' secrets),
        // then lines are dropped, said once.
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        let client = try TLSContext(configuration: certs.client(), environment: environment)
        let server = try TLSContext(configuration: certs.server(), environment: environment)
        let reports = Mutex<[String]>([])
        client.onKeyLogFailure { report in reports.withLock { $0.append(report) } }
        server.onKeyLogFailure { report in reports.withLock { $0.append(report) } }
        for _ in 0..<200 { try handshake(client: client, server: server) }
        let told = reports.withLock { $0 }
        #expect(told.count == 2, "\(told)")
        #expect(told.allSatisfy { $0.contains("the pipe is full: its reader is not reading") }, "\(told)")
    }

    /// A socket named by path (`/dev/stdout` on a socket) answers open() as a FIFO without a reader does: it is
    /// not called a pipe nothing reads, nor sent looking for a directory.
    @Test func aSocketIsNotCalledAPipe() throws {
        let path = temporaryPath()
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(socket >= 0)
        defer { close(socket) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() where index < buffer.count - 1 { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let refusal = #expect(throws: TransportError.self) {
            _ = try TLSContext(configuration: certs.client(), environment: ["SSLKEYLOGFILE": path])
        }
        #expect(
            refusal?.message.hasSuffix(
                "a socket cannot be opened by name; name a file, or a pipe whose reader is running, or unset "
                    + "SSLKEYLOGFILE") == true, "\(String(describing: refusal))")
    }

    /// A key log reached through a link (`/dev/stdout` redirected to a file) that others can read is refused with
    /// the chmod of the file itself: chmod of the link's name changed something else.
    @Test func aReadableFileBehindALinkIsNamedForItsChmod() throws {
        let file = temporaryPath()
        let link = temporaryPath()
        #expect(FileManager.default.createFile(atPath: file, contents: nil, attributes: [.posixPermissions: 0o644]))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: file)
        defer {
            try? FileManager.default.removeItem(atPath: link)
            try? FileManager.default.removeItem(atPath: file)
        }
        let refusal = #expect(throws: TransportError.self) {
            _ = try TLSContext(configuration: certs.client(), environment: ["SSLKEYLOGFILE": link])
        }
        let real = KeyLogWriter.resolved(file)
        #expect(
            refusal?.message
                == "SSLKEYLOGFILE=\(link) (\(real)) is readable by other users (mode 644), and its TLS secrets "
                + "decrypt the traffic: run chmod 600 \(real), or name a new file", "\(String(describing: refusal))")
    }

    @Test func nothingIsWrittenWhenSSLKEYLOGFILEIsUnset() throws {
        let path = temporaryPath()
        let client = try TLSContext(configuration: certs.client(), environment: ["HOME": "/root"])
        let server = try TLSContext(configuration: certs.server(), environment: ["SSLKEYLOGFILE": ""])
        #expect(client.keyLog == nil && server.keyLog == nil)
        try handshake(client: client, server: server)
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
