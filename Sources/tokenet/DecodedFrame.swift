import Foundation
import TokenetNode
import TokenetWire

/// One frame of `tokenet decode` as JSON: the frame's own proto3 JSON, except that a `message` frame whose call is
/// known shows its message decoded, under the name of its type (a message of unknown type shows its length alone).
enum DecodedFrame {
    /// What the messages on each stream are.
    struct Calls {
        /// Calls started in this input: their messages are requests.
        var started: [UInt32: AnyMethodDescriptor] = [:]
        /// Calls started on the other side (`--calls`): their messages here are responses.
        var answered: [UInt32: AnyMethodDescriptor]
        /// For any other stream (`--method`): its messages are this method's responses.
        var method: AnyMethodDescriptor?
        /// Calls started, here or on the other side, for a method this build does not know: their messages stay
        /// undecoded, and the note says why (it said their call_start was missing).
        var unknownMethods: [UInt32: String] = [:]

        /// Streams whose messages turned out not to be `method`'s responses, each told once.
        var notTheMethods: Set<UInt32> = []
        /// Streams whose messages were shown as `method`'s responses with their text and bytes masked, each told once.
        var toldGuessed: Set<UInt32> = []
        /// Whether a message of a call with no known method was told of (once per input).
        var toldUnknownCall = false
        /// The unknown methods whose messages were told of, each once.
        var toldUnknownMethods: Set<String> = []

        /// The type of the messages on `streamID`; `guessed` when only `--method` says so: the server's side of a
        /// connection also holds the streams of other calls (the CLI's reflection lookups come first), whose
        /// messages are no responses of that method.
        func type(of streamID: UInt32) -> (type: any ProtoMessage.Type, direction: String, guessed: Bool)? {
            if let call = started[streamID] { return (call.request, "request", false) }
            if let call = answered[streamID] { return (call.response, "response", false) }
            if let method { return (method.response, "response", true) }
            return nil
        }
    }

    static func json(_ frame: WireV1.Frame, calls: inout Calls) throws(CLIError) -> String {
        switch frame.kind {
        case .callStart(let start):
            if let known = DecodeCommand.Options.method(start.method) {
                calls.started[frame.streamID] = known
            } else {
                calls.unknownMethods[frame.streamID] = start.method
            }
        case .message(let message):
            guard let (type, direction, guessed) = calls.type(of: frame.streamID) else {
                calls.tellUnknownCall(frame.streamID)
                return withheld(frame.streamID, message)
            }
            let decoded: any ProtoMessage
            do {
                decoded = try type.init(serializedBytes: message.data)
            } catch {
                guard !guessed else {
                    calls.tellNotTheMethods(frame.streamID, type, "its bytes do not decode as one")
                    return withheld(frame.streamID, message)
                }
                throw CLIError(
                    .data, "decode: the message on stream \(frame.streamID) is not a \(type.protoName)",
                    cause: DescribedError(error))
            }
            // Bytes of fields the type does not have are dropped by the decoding: a message of another type read
            // as this one printed a plausible value built from whatever field numbers the two share.
            let dropped = type.unknownFieldCount(in: [UInt8](message.data))
            if dropped > 0 {
                guard !guessed else {
                    calls.tellNotTheMethods(frame.streamID, type, "it holds fields that type does not have")
                    return withheld(frame.streamID, message)
                }
                printError(
                    "decode: note: the message on stream \(frame.streamID) holds \(dropped) "
                        + "\(dropped == 1 ? "field" : "fields") \(type.protoName) (or a message in it) does not have, "
                        + "not shown (a peer "
                        + "built from newer .proto files?)")
            }
            let value: String
            do {
                let json = try decoded.jsonString(options: .pretty)
                value = SecretFields.maskedJSON(json, as: type, guessed ? .guessed : .confirmed)
                // Told only when the guess hid something: a message of numbers and enums shows as it would anyway.
                if guessed, value != SecretFields.maskedJSON(json, as: type, .confirmed) {
                    calls.tellGuessed(frame.streamID, type)
                }
            } catch {
                throw CLIError(
                    .data, "decode: the message on stream \(frame.streamID) cannot be shown as JSON",
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

    /// A message whose type is not known, by its length alone: which of its fields is a security code, a PIN or an
    /// access token cannot be told, and its base64 showed them all (the dissector withholds the same bytes).
    static func withheld(_ streamID: UInt32, _ message: WireV1.Message) -> String {
        """
        {
          "streamId": \(streamID),
          "message": {
            "withheldBytes": \(message.data.count)
          }
        }
        """
    }
}

extension DecodedFrame.Calls {
    /// Says once that messages are shown undecoded for want of their call's method, and how to give it: the help
    /// promised a note, and the server's side of a connection printed base64 with none.
    mutating func tellUnknownCall(_ streamID: UInt32) {
        if let path = unknownMethods[streamID] {
            tellUnknownMethod(streamID, path)
            return
        }
        guard !toldUnknownCall else { return }
        toldUnknownCall = true
        printError(
            "decode: note: the messages of calls whose call_start is not in the input (stream \(streamID) first) are "
                + "shown by their length alone (their bytes withheld: a field of a type not known may hold a "
                + "security code); give the client's side of the connection with --calls, or the method with "
                + "--method")
    }

    /// Says once per method that its messages are shown undecoded: this build has no types for it.
    mutating func tellUnknownMethod(_ streamID: UInt32, _ path: String) {
        guard toldUnknownMethods.insert(path).inserted else { return }
        printError(
            "decode: note: the messages of \(DecodeCommand.Options.shown(path)) (stream \(streamID) first) are shown "
                + "by their length alone: this build does not know that method (a peer built from newer .proto files?)")
    }

    /// Says once per stream that its messages are shown undecoded, not as `--method`'s responses.
    mutating func tellNotTheMethods(_ streamID: UInt32, _ type: any ProtoMessage.Type, _ why: String) {
        guard notTheMethods.insert(streamID).inserted else { return }
        printError(
            "decode: note: the messages on stream \(streamID) are not \(type.protoName) (\(why)), so they are shown "
                + "by their length alone: another call's, such as the CLI's reflection lookups; give the client's side with "
                + "--calls to know every stream's method")
    }
}

extension DecodedFrame.Calls {
    /// Says once per stream that its messages are taken for `--method`'s responses with no call_start to confirm
    /// it, so their text and bytes values show as "***": a message of another type that happens to decode as this
    /// one shows its secrets there (an access token read as a card reference).
    mutating func tellGuessed(_ streamID: UInt32, _ type: any ProtoMessage.Type) {
        guard toldGuessed.insert(streamID).inserted else { return }
        printError(
            "decode: note: the messages on stream \(streamID) are read as \(type.protoName) by --method alone (no "
                + "call_start confirms it), so their text and bytes fields show as \"***\": a message of another type "
                + "may decode as one; give the client's side of the connection with --calls to see them")
    }
}
