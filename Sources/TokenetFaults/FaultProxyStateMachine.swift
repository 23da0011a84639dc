/// What the fault proxy does with each event, given the faults in force: a pure state machine, driven by
/// `FaultProxy`, which only carries out the actions it returns.
///
/// Each direction has its own fault (a delay or a partition on the way to the server only holds back what a client
/// sends, while its answers flow: a lost response), and refusing applies to new connections. Every chunk of bytes
/// is forwarded at or after an instant the machine sets, and never before an earlier chunk of the same direction:
/// a delay shortened midway cannot reorder a stream. Shortening or lifting a delay also brings forward what it holds
/// already (`hurry`): a mistyped `delay 10m` is mended by `heal`, not only by cutting every connection, also on a
/// connection whose sides have ended, whose last bytes and close still wait (`finishing`).
///
/// A side's end of stream ends one direction only, as TCP's half-close does: it goes on to the other side after
/// the bytes before it (`shutdownWrite`) while the other direction flows on, so a client that shuts down its writes
/// still hears the answer. The connection finishes once both directions have ended; an error ends it whole.
public struct FaultProxyStateMachine: Sendable {
    public enum Direction: Sendable, Hashable, CustomStringConvertible {
        /// From the proxy's client to the upstream server.
        case toUpstream
        /// From the upstream server back to the client.
        case toClient

        /// As commands name it: the upstream is the server of the calls the proxy carries.
        public var description: String { self == .toUpstream ? "to-server" : "to-client" }

        public static let both: [Direction] = [.toUpstream, .toClient]
    }

    public typealias Instant = ContinuousClock.Instant

    public enum Action: Sendable, Equatable {
        /// Connect this accepted connection to the upstream address.
        case connectUpstream(UInt64)
        /// Write these bytes on in `direction`, not before `notBefore`, after what was forwarded before them.
        case forward(UInt64, Direction, [UInt8], notBefore: Instant)
        /// Write what was forwarded in `direction` and waits for a later instant by `notAfter` instead (in order): a
        /// delay was shortened or lifted.
        case hurry(UInt64, Direction, notAfter: Instant)
        /// Close both sides of the connection now, dropping what waits to be written (a reset, a refusal).
        case close(UInt64)
        /// Write what was forwarded in `direction`, then end the stream there (shut down the receiving side's
        /// writes): the sender in `direction` ended its stream. The other direction flows on.
        case shutdownWrite(UInt64, Direction)
        /// Write what was forwarded so far, then close both sides (both directions ended, or an error).
        case finish(UInt64)
    }

    /// Bytes per direction of a connection, held by a partition or forwarded and not yet written (a delay holds
    /// them too), past which its sender is no longer read: a long delay on a busy link holds at most this much, as
    /// a TCP window would, instead of all that the sender can send meanwhile.
    public let holdLimit: Int

    /// The fault of each direction: `.none`, a delay or a partition.
    private var faults: [Direction: Fault] = [.toUpstream: .none, .toClient: .none]
    /// Whether new connections are closed as soon as they are accepted.
    public private(set) var refusing = false
    private var nextID: UInt64 = 1
    private var connections: [UInt64: Connection] = [:]
    /// Connections both sides or an error have ended (`finish`ed, no longer carried) whose last chunks may still
    /// wait for a delay: when each direction's last chunk may go. Kept until their writers are done (`drained`) or
    /// the chunks' time has passed, so that lifting or shortening the delay brings those chunks forward as well;
    /// without them a mistyped `delay 10m` held the last answer of a server that had closed, and the close, until a
    /// reset.
    private var finishing: [UInt64: [Direction: Instant]] = [:]

    private struct Connection {
        /// When the last chunk of each direction may go, so that the next never goes before it.
        var lastDue: [Direction: Instant] = [:]
        /// Chunks held by a partition, in arrival order, per direction.
        var held: [Direction: [[UInt8]]] = [:]
        var heldBytes: [Direction: Int] = [:]
        /// Bytes forwarded and not yet written, per direction.
        var inFlight: [Direction: Int] = [:]
        /// The directions whose sender ended its stream.
        var ended: Set<Direction> = []
        /// The directions whose end went on (`shutdownWrite`); an end waits behind what a partition holds.
        var shut: Set<Direction> = []
        /// An error ended the connection while a partition held bytes: the close goes on after them, when it is
        /// lifted.
        var ending = false

        var holdsBytes: Bool { heldBytes.values.contains { $0 > 0 } }
    }

    public init(holdLimit: Int = 1 << 20) {
        self.holdLimit = holdLimit
    }

    /// The connections being carried.
    public var connectionCount: Int { connections.count }

    /// The fault in force in `direction` (never `.refuse`: see `refusing`).
    public func fault(_ direction: Direction) -> Fault { faults[direction] ?? .none }

    /// The faults in force as a command would set them: `refuse`, one fault for both directions (`partition`), or
    /// each direction's (`to-server partition, to-client none`).
    public var summary: String {
        if refusing { return "refuse" }
        let (up, down) = (fault(.toUpstream), fault(.toClient))
        if up == down { return up.description }
        return "to-server \(up), to-client \(down)"
    }

    /// Whether connection `id` is still carried (not refused, reset or ended).
    public func carries(_ id: UInt64) -> Bool { connections[id] != nil }

    /// A client connected to the proxy. Returns its id and what to do: connect it upstream, or, while refusing,
    /// close it (it is then not tracked).
    public mutating func accepted() -> (id: UInt64, action: Action) {
        let id = nextID
        nextID += 1
        if refusing { return (id, .close(id)) }
        connections[id] = Connection()
        return (id, .connectUpstream(id))
    }

    /// `bytes` arrived on connection `id`, to go on in `direction`.
    public mutating func received(_ id: UInt64, _ direction: Direction, _ bytes: [UInt8], at now: Instant)
        -> [Action]
    {
        guard var connection = connections[id] else { return [] }
        defer { connections[id] = connection }
        switch fault(direction) {
        case .partition:
            connection.held[direction, default: []].append(bytes)
            connection.heldBytes[direction, default: 0] += bytes.count
            return []
        case .none, .refuse:
            return [forward(&connection, id, direction, bytes, due: now)]
        case .delay(let delay):
            return [forward(&connection, id, direction, bytes, due: now + delay)]
        }
    }

    /// Whether the proxy should read more from the side that sends in `direction`: not while it holds as much of it
    /// as `holdLimit` allows, held by a partition or on its way (the bytes then wait in the kernel and in the
    /// sender, as in a real network).
    public func mayRead(_ id: UInt64, _ direction: Direction) -> Bool {
        guard let connection = connections[id] else { return true }
        return connection.heldBytes[direction, default: 0] + connection.inFlight[direction, default: 0] < holdLimit
    }

    /// `count` bytes forwarded on connection `id` in `direction` were written: room for as many more.
    public mutating func written(_ id: UInt64, _ direction: Direction, _ count: Int) {
        guard var connection = connections[id] else { return }
        connection.inFlight[direction] = max(0, connection.inFlight[direction, default: 0] - count)
        connections[id] = connection
    }

    /// Puts `fault` in force, from the next byte on: in `direction` only, or, without one, for everything (and
    /// `.refuse` only then, which refuses new connections and lifts the directions' faults). Lifting a partition
    /// sends on what it held, in order (after the new delay, if any). A delay shortened or lifted brings forward
    /// what was forwarded under it to go later than the new delay allows (`hurry`); one made longer, or a partition,
    /// leaves what is already on its way alone.
    public mutating func set(_ fault: Fault, only direction: Direction? = nil, at now: Instant) -> [Action] {
        let directions = direction.map { [$0] } ?? Direction.both
        if direction == nil { refusing = fault == .refuse }
        let flowing = fault == .refuse ? Fault.none : fault
        var lifted: [Direction] = []
        for direction in directions {
            if self.fault(direction) == .partition && flowing != .partition { lifted.append(direction) }
            faults[direction] = flowing
        }
        let due: Instant
        if case .delay(let delay) = flowing { due = now + delay } else { due = now }
        var actions: [Action] = []
        if flowing != .partition {
            for id in Set(connections.keys).union(finishing.keys).sorted() {
                for direction in directions {
                    if let last = connections[id]?.lastDue[direction], last > due {
                        connections[id]?.lastDue[direction] = due
                    } else if let last = finishing[id]?[direction], last > due {
                        finishing[id]?[direction] = due
                    } else {
                        continue
                    }
                    actions.append(.hurry(id, direction, notAfter: due))
                }
            }
            // What may go by now can be brought forward no more: nothing is added to a finishing connection.
            finishing = finishing.filter { $0.value.values.contains { $0 > now } }
        }
        guard !lifted.isEmpty else { return actions }
        for id in connections.keys.sorted() {
            guard var connection = connections[id] else { continue }
            for direction in lifted {
                for bytes in connection.held[direction] ?? [] {
                    actions.append(forward(&connection, id, direction, bytes, due: due))
                }
                connection.held[direction] = nil
                connection.heldBytes[direction] = nil
            }
            actions += settle(connection, id)
        }
        return actions
    }

    /// Connection `id` failed on one side (a read or a write error: the peer reset it, or vanished): it is cut with
    /// a reset to both sides, as `reset` cuts every connection, so that the other side learns of the failure too. Its
    /// end went on as a clean end of stream, and a client that had half-closed took a server's cut-off answer for a
    /// whole one.
    public mutating func failed(_ id: UInt64) -> [Action] {
        finishing[id] = nil
        guard connections.removeValue(forKey: id) != nil else { return [] }
        return [.close(id)]
    }

    /// Closes every connection now. The faults stay in force. The finishing ones are the proxy's to cut
    /// (`FaultProxy.reset`), and have nothing left to bring forward.
    public mutating func reset() -> [Action] {
        let ids = connections.keys.sorted()
        connections = [:]
        finishing = [:]
        return ids.map { .close($0) }
    }

    /// The sender in `direction` of connection `id` ended its stream: the end goes on after what was forwarded in
    /// `direction` (`shutdownWrite`), while the other direction flows on; once both have ended, the connection
    /// finishes. Under a partition the end waits behind the bytes it holds in `direction`, as a peer's FIN would
    /// wait behind its data.
    public mutating func ended(_ id: UInt64, _ direction: Direction) -> [Action] {
        guard var connection = connections[id] else { return [] }
        connection.ended.insert(direction)
        return settle(connection, id)
    }

    /// Connection `id` failed (a read error, a failed write or upstream connect): what was forwarded goes on, then
    /// both sides close. Under a partition the close waits behind the bytes it holds.
    public mutating func ended(_ id: UInt64) -> [Action] {
        guard var connection = connections[id] else { return [] }
        connection.ending = true
        return settle(connection, id)
    }

    /// Stores `connection` after passing on the ends that nothing held by a partition keeps back; finishes it once
    /// both directions have ended, or an error ended it, and a partition holds nothing of it.
    private mutating func settle(_ connection: Connection, _ id: UInt64) -> [Action] {
        var connection = connection
        var actions: [Action] = []
        if !connection.ending {
            for direction in Direction.both
            where connection.ended.contains(direction) && !connection.shut.contains(direction)
                && connection.heldBytes[direction, default: 0] == 0
            {
                connection.shut.insert(direction)
                actions.append(.shutdownWrite(id, direction))
            }
        }
        let done = connection.ending ? !connection.holdsBytes : connection.shut.count == Direction.both.count
        guard done else {
            connections[id] = connection
            return actions
        }
        connections[id] = nil
        if !connection.lastDue.isEmpty { finishing[id] = connection.lastDue }
        return actions + [.finish(id)]
    }

    /// Connection `id` is done: its writers wrote what they had (or were cut), so no delay holds anything of it.
    public mutating func drained(_ id: UInt64) {
        finishing[id] = nil
    }

    private func forward(
        _ connection: inout Connection, _ id: UInt64, _ direction: Direction, _ bytes: [UInt8], due: Instant
    ) -> Action {
        let notBefore = max(due, connection.lastDue[direction] ?? due)
        connection.lastDue[direction] = notBefore
        connection.inFlight[direction, default: 0] += bytes.count
        return .forward(id, direction, bytes, notBefore: notBefore)
    }
}
