import Glibc
import Synchronization

/// Turns the host a connection is made to into the IP addresses the socket may connect to, in the order to try them.
///
/// An IPv4 or IPv6 address, or `localhost` (127.0.0.1), needs no lookup. A host name (a container's service name, a
/// machine on the network) is looked up with getaddrinfo(3), as `/etc/hosts` and DNS answer it: a call that blocks,
/// so it runs on a thread of its own, never on an event loop, and is given at most the connection's own time. A
/// lookup still running then finishes on its thread and its answer is dropped. A name's IPv4 addresses come first,
/// since nodes listen on IPv4 unless told otherwise, then its IPv6 ones; a connection tries them in turn while the
/// TCP connection cannot be made (`ConnectTargets`).
public enum HostResolver {
    /// The first IP address to connect to for `host`, looked up within `limit` when it is a name.
    public static func address(of host: String, within limit: Duration) async throws(TransportError) -> String {
        try await addresses(of: host, within: limit)[0]
    }

    /// The IP addresses to connect to for `host`, in the order to try them (never empty): the address itself, or
    /// a name's, looked up within `limit`.
    public static func addresses(of host: String, within limit: Duration) async throws(TransportError) -> [String] {
        if let (address, _) = try? Socket.ipAddress(host) { return [address] }
        guard isHostName(host) else {
            throw TransportError(.invalidAddress, "\(host) is not an IP address or a host name")
        }
        let answer = Answer()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard answer.wait(continuation) else { return }
                NamedThread.start("tokenet-resolve") { answer.give(lookUp(host)) }
                answer.give(
                    afterAtMost: limit,
                    .failure(
                        TransportError(
                            .timeout,
                            "looking up \(host) took longer than \(describe(limit)); check the name and the "
                                + "system's DNS servers")))
            }
        } onCancel: {
            answer.give(.failure(ConnectionStateMachine.attemptCancelled))
        }
        return try result.get()
    }

    private static func describe(_ limit: Duration) -> String {
        let (seconds, attoseconds) = limit.components
        return seconds >= 1 ? "\(seconds) s" : "\(attoseconds / 1_000_000_000_000_000) ms"
    }

    /// The addresses getaddrinfo(3) gives for `host`: its IPv4 ones, then its IPv6 ones, each once and in the order
    /// given. Blocks.
    static func lookUp(_ host: String) -> Result<[String], TransportError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0 else {
            let reason = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            return .failure(TransportError(.invalidAddress, "cannot look up \(host): \(reason)"))
        }
        var four: [String] = []
        var six: [String] = []
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ai_next }
            guard let socketAddress = current.pointee.ai_addr else { continue }
            switch current.pointee.ai_family {
            case AF_INET:
                var address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                if let text = addressText(AF_INET, &address, length: INET_ADDRSTRLEN), !four.contains(text) {
                    four.append(text)
                }
            case AF_INET6:
                var address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    $0.pointee.sin6_addr
                }
                if let text = addressText(AF_INET6, &address, length: INET6_ADDRSTRLEN), !six.contains(text) {
                    six.append(text)
                }
            default: break
            }
        }
        guard !four.isEmpty || !six.isEmpty else {
            return .failure(TransportError(.invalidAddress, "cannot look up \(host): it has no IP address"))
        }
        return .success(four + six)
    }

    /// inet_ntop(3) of the address at `address`.
    private static func addressText(_ family: Int32, _ address: UnsafeRawPointer, length: Int32) -> String? {
        var text = [CChar](repeating: 0, count: Int(length))
        guard inet_ntop(family, address, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `text` is a host name as DNS writes them (RFC 1123): labels of letters, digits and hyphens, neither
    /// starting nor ending with a hyphen, of at most 63 characters each and 253 in all, joined by dots, with a final
    /// dot allowed; the last label holds a letter, so that `999.0.0.1` is a wrong IPv4 address, not a name. An
    /// underscore is taken too, as resolvers take it: container names have them (`project_tsp_1`), and Docker's DNS
    /// answers for them.
    public static func isHostName(_ text: String) -> Bool {
        let name = text.hasSuffix(".") ? text.dropLast() : Substring(text)
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-",
                label.utf8.allSatisfy({ isASCIILetter($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F })
            else { return false }
        }
        return labels.last.map { $0.utf8.contains(where: isASCIILetter) } ?? false
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    /// The one answer a lookup gets: the lookup's, the timeout's or the cancellation's, whichever comes first (a
    /// cancellation may come before the wait begins, and is kept for it).
    private final class Answer: Sendable {
        typealias Waiter = CheckedContinuation<Result<[String], TransportError>, Never>

        private struct State {
            var continuation: Waiter?
            var early: Result<[String], TransportError>?
            var timer: Task<Void, Never>?
            var given = false
        }
        private let state = Mutex(State())

        /// Waits for the answer; false when it came already (a cancellation), and the wait is over.
        func wait(_ continuation: Waiter) -> Bool {
            let early = state.withLock { state in
                guard let early = state.early else {
                    state.continuation = continuation
                    return Result<[String], TransportError>?.none
                }
                return early
            }
            guard let early else { return true }
            continuation.resume(returning: early)
            return false
        }

        func give(afterAtMost limit: Duration, _ result: Result<[String], TransportError>) {
            let timer = Task { [self] in
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                give(result)
            }
            let given = state.withLock { state in
                if !state.given { state.timer = timer }
                return state.given
            }
            if given { timer.cancel() }
        }

        func give(_ result: Result<[String], TransportError>) {
            let (continuation, timer) = state.withLock { state -> (Waiter?, Task<Void, Never>?) in
                guard !state.given else { return (nil, nil) }
                state.given = true
                if state.continuation == nil { state.early = result }
                defer {
                    state.continuation = nil
                    state.timer = nil
                }
                return (state.continuation, state.timer)
            }
            timer?.cancel()
            continuation?.resume(returning: result)
        }
    }
}
