import TokenetWire

/// The limits one side of a connection enforces on what it receives, announced in its `hello`.
public struct ConnectionSettings: Hashable, Sendable {
    /// This build speaks protocol version 1 only (Protos/README.md).
    public static let protocolVersion: UInt32 = 1

    /// The largest frame this side accepts; at least `minimumMaxFrameSize`.
    public var maxFrameSize: Int
    public var maxConcurrentStreams: Int
    public var initialStreamWindow: Int
    public var keepaliveIntervalMilliseconds: Int
    /// Not announced: how many bytes of frames written without waiting for room (pongs, statuses) may wait for a
    /// peer that keeps sending but reads nothing before the connection ends (`peerStoppedReading`).
    public var unreadOutboundLimit: Int
    /// Not announced: how many frames that do no work (pings, pongs, empty frames) the peer may send at once; a
    /// tenth of that a second after it (`WorkFreeFrameAllowance`).
    public var workFreeFrameBurst: Int

    public init(
        maxFrameSize: Int = 4 * 1024 * 1024,
        maxConcurrentStreams: Int = 100,
        initialStreamWindow: Int = 1024 * 1024,
        keepaliveIntervalMilliseconds: Int = 0,
        unreadOutboundLimit: Int = 8 * 1024 * 1024,
        workFreeFrameBurst: Int = 1_000
    ) {
        self.maxFrameSize = maxFrameSize
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialStreamWindow = initialStreamWindow
        self.keepaliveIntervalMilliseconds = keepaliveIntervalMilliseconds
        self.unreadOutboundLimit = unreadOutboundLimit
        self.workFreeFrameBurst = workFreeFrameBurst
    }

    public static let defaults = ConnectionSettings()

    /// The room a message frame takes around its data (stream id, tags, lengths), left out of `maxFrameSize`.
    public static let messageFrameOverhead = 64

    /// The largest message a side with these settings takes: the smaller of its frame size, less the frame's own
    /// fields, and its flow-control window, which never grows past its initial size (a larger message would wait
    /// for it forever).
    public var largestMessage: Int { min(maxFrameSize - Self.messageFrameOverhead, initialStreamWindow) }

    /// The smallest `max_frame_size` a hello may announce: 16 KiB, HTTP/2's smallest SETTINGS_MAX_FRAME_SIZE. A peer
    /// that announces less is refused at its hello: every frame the runtime writes on its own (a status such as
    /// RESOURCE_EXHAUSTED with its message, a goaway with its reason) must fit in a frame the peer accepts.
    public static let minimumMaxFrameSize = 16_384

    /// The settings a peer announced; a zero means the default.
    init(wire: WireV1.Settings?) {
        let wire = wire ?? WireV1.Settings()
        let defaults = ConnectionSettings.defaults
        self.init(
            maxFrameSize: wire.maxFrameSize == 0 ? defaults.maxFrameSize : Int(wire.maxFrameSize),
            maxConcurrentStreams: wire.maxConcurrentStreams == 0
                ? defaults.maxConcurrentStreams : Int(wire.maxConcurrentStreams),
            initialStreamWindow: wire.initialStreamWindow == 0
                ? defaults.initialStreamWindow : Int(wire.initialStreamWindow),
            keepaliveIntervalMilliseconds: Int(wire.keepaliveIntervalMs)
        )
    }

    var wire: WireV1.Settings {
        WireV1.Settings(
            maxFrameSize: UInt32(clamping: maxFrameSize),
            maxConcurrentStreams: UInt32(clamping: maxConcurrentStreams),
            initialStreamWindow: UInt32(clamping: initialStreamWindow),
            keepaliveIntervalMs: UInt32(clamping: keepaliveIntervalMilliseconds)
        )
    }
}
