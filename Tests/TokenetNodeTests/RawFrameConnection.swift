import TokenetNode
import TokenetTransport
import TokenetWire

/// A plaintext connection to a node that speaks frames by hand, for tests that need the wire's own order: a call
/// left half-sent, a ping answered late or not at all.
final class RawFrameConnection {
    let connection: PlainConnection
    private let encoder = FrameEncoder()
    private var decoder = FrameDecoder()

    init(to address: HostPort, on loop: EventLoop) async throws {
        connection = try await PlainConnection.connect(host: address.host, port: address.port, on: loop)
    }

    /// Writes `frames` in one write.
    func send(_ frames: WireV1.Frame...) async throws {
        var bytes: [UInt8] = []
        for frame in frames { try encoder.encode(frame, into: &bytes) }
        try await connection.write(bytes)
    }

    /// The first frame from the node for which `wanted` holds; nil when the node closed the connection first. The
    /// node's pings are answered on the way when `answeringPings`, so that a loaded machine's slowness cannot pass
    /// for a silent peer.
    func next(answeringPings: Bool = false, where wanted: (WireV1.Frame) -> Bool) async throws -> WireV1.Frame? {
        while true {
            while let frame = try decoder.nextFrame() {
                if wanted(frame) { return frame }
                if answeringPings, case .ping(let ping) = frame.kind {
                    try await send(WireV1.Frame(streamID: 0, kind: .pong(WireV1.Pong(payload: ping.payload))))
                }
            }
            guard let chunk = try await connection.read() else { return nil }
            decoder.feed(chunk)
        }
    }

    func close() async { await connection.close() }
}
