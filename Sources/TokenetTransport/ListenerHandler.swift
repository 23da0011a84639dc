/// The listening socket's handler on the loop: accepts, and hands each accepted socket to `startConnection`, which
/// owns it from then on (TLS or plaintext). Shared by `TLSListener` and `PlainListener`.
final class ListenerHandler: EventLoopHandler {
    /// After EMFILE/ENFILE, or with the process's sockets at their budget, the pending connection stays queued and
    /// epoll would report it again immediately; pausing accepts briefly avoids spinning meanwhile.
    private static let acceptPause: Duration = .milliseconds(100)
    private static let acceptsPerWakeup = 64

    let port: UInt16
    private let loop: EventLoop
    private let fd: Int32
    private let startConnection: (Int32) -> Void
    private let onAcceptFailure: @Sendable (TransportError) -> Void
    private let onStop: () -> Void
    private var registration: UInt64?

    private init(
        loop: EventLoop, fd: Int32, port: UInt16, startConnection: @escaping (Int32) -> Void,
        onAcceptFailure: @escaping @Sendable (TransportError) -> Void, onStop: @escaping () -> Void
    ) {
        self.loop = loop
        self.fd = fd
        self.port = port
        self.startConnection = startConnection
        self.onAcceptFailure = onAcceptFailure
        self.onStop = onStop
    }

    /// Binds host:port (port 0 picks a free port) and registers with `loop`; call on the loop.
    static func start(
        host: String, port: UInt16, loop: EventLoop, onAcceptFailure: @escaping @Sendable (TransportError) -> Void,
        onStop: @escaping () -> Void, startConnection: @escaping (Int32) -> Void
    ) throws(TransportError) -> ListenerHandler {
        let (fd, boundPort) = try Socket.listen(host: host, port: port)
        let handler = ListenerHandler(
            loop: loop, fd: fd, port: boundPort, startConnection: startConnection, onAcceptFailure: onAcceptFailure,
            onStop: onStop)
        do throws(TransportError) {
            handler.registration = try loop.register(fd: fd, interest: .readOnly, handler: handler)
        } catch {
            Socket.close(fd)
            throw error
        }
        return handler
    }

    func stop() {
        guard let registration else { return }
        loop.deregister(fd: fd, registration: registration)
        self.registration = nil
        Socket.close(fd)
        onStop()
    }

    func handleEvent(readable: Bool, writable: Bool, failed: Bool) {
        for _ in 0..<Self.acceptsPerWakeup {
            guard registration != nil else { return }
            // Short of the limit, so that a peer holding connections never leaves the process without a
            // descriptor for its own work (see `Socket.reservedDescriptors`).
            if let refusal = Socket.acceptRefusal() {
                onAcceptFailure(refusal)
                pauseAccepting()
                return
            }
            let accepted: Int32?
            do throws(TransportError) {
                accepted = try Socket.accept(fd)
            } catch {
                onAcceptFailure(error)
                pauseAccepting()
                return
            }
            guard let client = accepted else { return }
            startConnection(client)
        }
    }

    func eventLoopStopping() {
        stop()
    }

    private func pauseAccepting() {
        guard let registration else { return }
        loop.setInterest(.none, fd: fd, registration: registration)
        let bound = LoopBound(self, loop: loop)
        loop.scheduleTimer(after: Self.acceptPause) {
            let handler = bound.value
            if let registration = handler.registration {
                handler.loop.setInterest(.readOnly, fd: handler.fd, registration: registration)
            }
        }
    }
}
