import Foundation
import TokenetWire

/// A capture file (classic pcap, Ethernet, IPv4, TCP) of plaintext-mode connections on loopback, written byte for
/// byte as the tests choose: frames split across segments, several in one, a connection seen from its middle, or
/// bytes that are not frames at all. The live capture of `check-dissector` needs root and cannot shape segments.
struct PlaintextCapture {
    /// One TCP connection between a client port and a server port, with each side's next sequence number.
    struct Connection {
        let clientPort: UInt16
        let serverPort: UInt16
        var clientSequence: UInt32 = 1000
        var serverSequence: UInt32 = 5000
    }

    private(set) var packets: [[UInt8]] = []

    /// Opens a connection with the SYN, SYN-ACK, ACK handshake, or without it (`handshake: false`), as a capture
    /// started after the connection was made sees it.
    mutating func connect(clientPort: UInt16, serverPort: UInt16 = 7001, handshake: Bool = true) -> Connection {
        var connection = Connection(clientPort: clientPort, serverPort: serverPort)
        if handshake {
            packets.append(segment(connection, fromClient: true, flags: 0x02, []))
            connection.clientSequence += 1
            packets.append(segment(connection, fromClient: false, flags: 0x12, []))
            connection.serverSequence += 1
            packets.append(segment(connection, fromClient: true, flags: 0x10, []))
        }
        return connection
    }

    /// One segment of `bytes` from the client (or the server) of `connection`.
    mutating func send(_ bytes: [UInt8], on connection: inout Connection, fromClient: Bool) {
        packets.append(segment(connection, fromClient: fromClient, flags: 0x18, bytes))
        if fromClient {
            connection.clientSequence &+= UInt32(bytes.count)
        } else {
            connection.serverSequence &+= UInt32(bytes.count)
        }
    }

    /// The frames, encoded as they travel.
    static func bytes(_ frames: [WireV1.Frame]) throws -> [UInt8] {
        try frames.flatMap { try FrameEncoder().encode($0) }
    }

    /// The pcap file: a global header, then each packet 1 ms after the one before.
    func write(to path: String) throws {
        var file: [UInt8] = []
        file += le32(0xA1B2_C3D4) + le16(2) + le16(4) + le32(0) + le32(0) + le32(262_144) + le32(1)
        for (index, packet) in packets.enumerated() {
            file += le32(1_700_000_000) + le32(UInt32(index + 1) * 1000)
            file += le32(UInt32(packet.count)) + le32(UInt32(packet.count)) + packet
        }
        try Data(file).write(to: URL(fileURLWithPath: path))
    }

    private func segment(_ connection: Connection, fromClient: Bool, flags: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let ports =
            fromClient
            ? (connection.clientPort, connection.serverPort) : (connection.serverPort, connection.clientPort)
        let sequence = fromClient ? connection.clientSequence : connection.serverSequence
        let acknowledged = fromClient ? connection.serverSequence : connection.clientSequence
        let loopback: [UInt8] = [127, 0, 0, 1]
        var tcp = be16(ports.0) + be16(ports.1) + be32(sequence) + be32(acknowledged)
        tcp += [5 << 4, flags] + be16(65535) + be16(0) + be16(0)
        let pseudo = loopback + loopback + [0, 6] + be16(UInt16(tcp.count + payload.count))
        let tcpChecksum = checksum(pseudo + tcp + payload)
        tcp[16] = UInt8(tcpChecksum >> 8)
        tcp[17] = UInt8(tcpChecksum & 0xFF)
        var ip: [UInt8] = [0x45, 0] + be16(UInt16(20 + tcp.count + payload.count)) + be16(0) + be16(0x4000)
        ip += [64, 6] + be16(0) + loopback + loopback
        let ipChecksum = checksum(ip)
        ip[10] = UInt8(ipChecksum >> 8)
        ip[11] = UInt8(ipChecksum & 0xFF)
        return [UInt8](repeating: 0, count: 12) + [0x08, 0x00] + ip + tcp + payload
    }

    private func checksum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var index = 0
        while index < bytes.count {
            let low = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            sum += UInt32(bytes[index]) << 8 | low
            index += 2
        }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }

    private func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    private func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }
    private func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    private func be32(_ value: UInt32) -> [UInt8] { (0..<4).reversed().map { UInt8((value >> (8 * $0)) & 0xFF) } }
}
