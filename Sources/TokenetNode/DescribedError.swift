import Foundation

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
    /// `JSONDecoder` does not say.
    public init(decoding error: any Error, of data: Data) {
        if case DecodingError.dataCorrupted(let context) = error, context.codingPath.isEmpty {
            do {
                _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            } catch {
                self.init(description: "not valid JSON: " + Self.reason(of: error))
                return
            }
        }
        self.init(error)
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
