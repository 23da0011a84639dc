import Foundation
import TokenetTransport
import TokenetWire

/// One call as the server sees it: who called, what, until when, and its request messages.
final class ServerCall: Sendable {
    let connection: RPCConnection
    let streamID: UInt32
    let method: String
    let metadata: Metadata
    let deadline: ContinuousClock.Instant?
    let peer: PeerIdentity?
    let requests: MessageQueue

    init(
        connection: RPCConnection,
        streamID: UInt32,
        method: String,
        metadata: Metadata,
        deadline: ContinuousClock.Instant?,
        peer: PeerIdentity?,
        requests: MessageQueue
    ) {
        self.connection = connection
        self.streamID = streamID
        self.method = method
        self.metadata = metadata
        self.deadline = deadline
        self.peer = peer
        self.requests = requests
    }

    /// Whether `data` would leave now, without waiting for window or room (`RPCConnection.hasRoom`).
    func hasRoom(for data: Data) -> Bool { connection.hasRoom(streamID, forBytes: data.count) }

    func send(_ data: Data) async throws {
        guard connection.sendResponse(streamID, data) else {
            throw RPCError(.cancelled, "the call is over")
        }
        await connection.waitForSendCapacity(streamID)
    }

    /// The single response of a unary or client-streaming call; it leaves together with the status, packed
    /// straight into its frame.
    func sendFinal(_ response: some ProtoMessage) throws {
        let sent = try response.withPackable { try connection.sendFinalResponse(streamID, .packable($0)) }
        guard sent else {
            throw RPCError(.cancelled, "the call is over")
        }
    }

    /// Ends the call with `status`; returns what the caller was told (see `RPCConnection.finishServerCall`).
    nonisolated(nonsending) func finish(_ status: WireV1.Status) async -> WireV1.Status {
        await connection.finishServerCall(streamID, status)
    }
}
