import Foundation
import TokenetWire

/// A cause known only by its description, for underlying errors that are not `Sendable`.
///
/// Foundation's errors describe themselves for a debugger (`Error Domain=NSCocoaErrorDomain Code=260 … UserInfo=…`,
/// `DecodingError.dataCorrupted: Data was corrupted. Debug description: …`); a person reading a node's refusal to
/// start needs only the reason, so those are cut down to it: the system's words for a failed file operation, the
/// place in the JSON for a file that does not parse, the key for a value of the wrong type.
public struct DescribedError: Error, CustomStringConvertible, Sendable {
    public var description: String

    public init(_ error: any Error) {
        self.init(description: Self.reason(of: error))
    }

    private init(description: String) {
        self.description = description
    }

    /// For an error from decoding `data` as JSON: a syntax error names where the text stops being JSON, which
    /// `JSONDecoder` does not say, and a value of the wrong kind is named by its key with what it must be and what
    /// it is (`"device" must be a JSON object, not a string`), in place of Swift's
    /// `Expected to decode Dictionary<String, Any> but found a string instead.`
    public init(decoding error: any Error, of data: Data) {
        if case DecodingError.dataCorrupted(let context) = error, context.codingPath.isEmpty {
            do {
                _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            } catch {
                self.init(description: "not valid JSON: " + Self.reason(of: error))
                return
            }
            // Valid JSON that the decoder still calls invalid: in practice a number that does not fit the type of
            // its key (a fraction or a negative number where a whole number goes), for which it names no key.
            self.init(
                description: "a value in it does not fit its key, most likely a number (a fraction, a negative or "
                    + "too large a number where a whole number goes)")
            return
        }
        // A document that is `null`: Foundation's words were about decoding containers.
        if case DecodingError.valueNotFound(let type, let context) = error, context.codingPath.isEmpty {
            self.init(description: "it holds null, not \(Self.jsonKind(type))")
            return
        }
        if case DecodingError.typeMismatch(let type, let context) = error {
            let found = Self.kind(at: context.codingPath, in: data)
            let expected = Self.jsonKind(type)
            if context.codingPath.isEmpty {
                self.init(description: found.map { "it holds \($0), not \(expected)" } ?? "it is not \(expected)")
            } else {
                let key = String(Self.at(context.codingPath).dropLast(2))
                self.init(description: "\(key) must be \(expected)" + (found.map { ", not \($0)" } ?? ""))
            }
            return
        }
        self.init(error)
    }

    /// What a JSON value of Swift type `type` is called in a message.
    private static func jsonKind(_ type: Any.Type) -> String {
        let name = String(describing: type)
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is any BinaryInteger.Type: return "a whole number"
        case is any BinaryFloatingPoint.Type: return "a number"
        default:
            if name.hasPrefix("Dictionary<") { return "a JSON object" }
            if name.hasPrefix("Array<") { return "a JSON array" }
            return "a JSON object"
        }
    }

    /// What kind of value stands at `path` in the JSON document `data` (nil when there is none, or the text does
    /// not parse), named as `jsonKind` names the expected one.
    private static func kind(at path: [any CodingKey], in data: Data) -> String? {
        guard var value = try? JSONValue(parsing: String(decoding: data, as: UTF8.self)) else { return nil }
        for key in path {
            switch value {
            case .array(let elements):
                guard let index = key.intValue, elements.indices.contains(index) else { return nil }
                value = elements[index]
            case .object(let members):
                guard let member = members.last(where: { $0.key == key.stringValue }) else { return nil }
                value = member.value
            default:
                return nil
            }
        }
        if case .object = value { return "a JSON object" }
        return value.kindName
    }

    private static func reason(of error: any Error) -> String {
        if let decoding = error as? DecodingError {
            return reason(of: decoding)
        }
        if let cocoa = error as? CocoaError {
            if let posix = cocoa.underlying as NSError?, posix.domain == NSPOSIXErrorDomain {
                return String(cString: strerror(Int32(posix.code)))
            }
            if let detail = cocoa.userInfo[NSDebugDescriptionErrorKey] as? String {
                return detail
            }
            return cocoa.localizedDescription
        }
        return String(describing: error)
    }

    private static func reason(of error: DecodingError) -> String {
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return at(context.codingPath) + context.debugDescription
        case .keyNotFound(let key, let context):
            return at(context.codingPath) + "missing \"\(key.stringValue)\""
        case .dataCorrupted(let context):
            guard context.codingPath.isEmpty else { return at(context.codingPath) + context.debugDescription }
            return "not valid JSON"
        @unknown default:
            return String(describing: error)
        }
    }

    /// `"device.deviceId": ` for a value inside the document; nothing for the top level.
    private static func at(_ path: [any CodingKey]) -> String {
        guard !path.isEmpty else { return "" }
        let names = path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
        return "\"" + names.joined(separator: ".").replacingOccurrences(of: ".[", with: "[") + "\": "
    }
}
