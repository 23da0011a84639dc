import Foundation
import Synchronization
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet call -v`: what a call sent and how it ended, in the manner of grpcurl's `-v`, on standard error, so that
/// standard output keeps the responses alone (for `jq`). Before the call: the method with its kind and types, the
/// node with the identity its certificate proved, and the request metadata, the trace id included (the key to the
/// call's lines in every node's log). After it: the trailers of the node's status (when it sent one), the messages
/// sent and received, the time the call took, and its status.
final class CallTrace: Sendable {
    private struct State {
        var received = 0
        var readerLeft = false
        var trailers: Metadata?
    }

    private let sent: Int
    private let started = ContinuousClock.now
    private let state = Mutex(State())

    init(_ target: CallTarget, requests: Int, session: InspectSession) {
        sent = requests
        let kind =
            switch target.kind {
            case .unary: "unary"
            case .serverStreaming: "server-streaming"
            case .clientStreaming: "client-streaming"
            case .bidirectionalStreaming: "bidirectional"
            }
        printError(
            "Method \(target.path) (\(kind)): \(target.request.protoName) -> \(target.response.protoName)")
        let node = session.client.peerIdentity.map { "\($0) over TLS" } ?? "no identity, over plaintext"
        printError("Node \(session.options.address): \(node)")
        Self.printMetadata("Request metadata", session.callOptions.metadata)
    }

    /// `title` with the number of entries, then one line per entry. A text value is the peer's or the person's
    /// text: control characters escaped, a card number masked, as everywhere the CLI prints; a binary value's
    /// bytes are masked as UTF-8 text before they are shown in base64, and the line says when that changed them.
    private static func printMetadata(_ title: String, _ metadata: Metadata) {
        let entries = metadata.entries
        printError("\(title) (\(entries.count) \(entries.count == 1 ? "entry" : "entries")):")
        for (key, value) in entries {
            switch value {
            // Keys are the person's or the peer's text too (`-H 'x-4761…: v'`).
            case .text(let text): printError("  \(escapingControls(maskPAN(key))): \(escapingControls(maskPAN(text)))")
            case .binary(let bytes):
                // Masked before it is encoded: base64 hides a card number's digits from the masking of text only
                // (`tokenet decode` and the dissector mask binary values so too); and after, for base64 that reads
                // as one itself (`-H 'x-card-bin: 4761000010000009'` is valid base64 of other bytes).
                let masked = maskPAN(utf8: Array(bytes))
                let shown = maskPAN(Data(masked).base64EncodedString())
                // Said when the bytes shown are not those sent: base64 of masked text reads as the value itself.
                let note = masked == Array(bytes) ? "" : ", masked: they hold a card number"
                printError("  \(escapingControls(maskPAN(key))): \(shown) (\(bytes.count) bytes\(note))")
            }
        }
    }

    /// The trailers of the node's status (`CallOptions.onTrailers`).
    func receivedTrailers(_ trailers: Metadata) { state.withLock { $0.trailers = trailers } }

    func received() { state.withLock { $0.received += 1 } }

    func readerLeft() { state.withLock { $0.readerLeft = true } }

    func endedOK() {
        let left = state.withLock { $0.readerLeft }
        summary(left ? "CANCELLED by this command: nobody reads its output any more" : "OK")
    }

    func ended(by error: any Error) {
        let status =
            (error as? RPCError).map { $0.code.protoValueName ?? "CODE_\($0.code.rawValue)" }
            ?? "no status: \(maskPAN("\(error)"))"
        summary(status)
    }

    private func summary(_ status: String) {
        let (received, trailers) = state.withLock { ($0.received, $0.trailers) }
        if let trailers { Self.printMetadata("Response trailers", trailers) }
        let took = DurationText.describe(ContinuousClock.now - started)
        printError(
            "Sent \(Self.count(sent, "request")), received \(Self.count(received, "response")) in \(took): \(status)")
    }

    private static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }
}
