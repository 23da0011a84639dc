import Foundation
import TokenetNode
import TokenetWire

/// One frame of `tokenet decode` as JSON: the frame's own proto3 JSON, except that a `message` frame whose call is
/// known shows its message decoded, under the name of its type (a message of unknown type keeps its base64 data).
enum DecodedFrame {
    /// What the messages on each stream are.
    struct Calls {
        /// Calls started in this input: their messages are requests.
        var started: [UInt32: AnyMethodDescriptor] = [:]
        /// Calls started on the other side (`--calls`): their messages here are responses.
        var answered: [UInt32: AnyMethodDescriptor]
        /// For any other stream (`--method`): its messages are this method's responses.
        var method: AnyMethodDescriptor?

        func type(of streamID: UInt32) -> (type: any ProtoMessage.Type, direction: String)? {
            if let call = started[streamID] { return (call.request, "request") }
            if let call = answered[streamID] ?? method { return (call.response, "response") }
            return nil
        }
    }

    static func json(_ frame: WireV1.Frame, calls: inout Calls) throws(CLIError) -> String {
        switch frame.kind {
        case .callStart(let start):
            if let known = DecodeCommand.Options.method(start.method) { calls.started[frame.streamID] = known }
        case .message(let message):
            guard let (type, direction) = calls.type(of: frame.streamID) else { break }
            let value: String
            do {
                value = try type.init(serializedBytes: message.data).jsonString(options: .pretty)
            } catch {
                throw CLIError(
                    .data, "decode: the message on stream \(frame.streamID) is not a \(type.protoName)",
                    cause: DescribedError(error))
            }
            return """
                {
                  "streamId": \(frame.streamID),
                  "message": {
                    "\(direction)": "\(type.protoName)",
                    "value": \(value.replacingOccurrences(of: "\n", with: "\n    "))
                  }
                }
                """
        default:
            break
        }
        do {
            return try frame.jsonString(options: .pretty)
        } catch {
            throw CLIError(.data, "decode: a frame cannot be shown as JSON", cause: DescribedError(error))
        }
    }
}
