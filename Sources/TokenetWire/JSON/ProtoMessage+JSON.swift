/// How `jsonString(options:)` lays out its text.
public struct JSONEncodingOptions: Sendable {
    /// Spaces per nesting level; 0 writes everything on one line.
    public var indent: Int
    /// Writes the fields at their default value too (`ProtoJSONEncoder`), as grpcurl's `-emit-defaults` does.
    public var emitDefaults: Bool

    public init(indent: Int = 0, emitDefaults: Bool = false) {
        self.indent = indent
        self.emitDefaults = emitDefaults
    }

    public static let compact = JSONEncodingOptions()
    public static let pretty = JSONEncodingOptions(indent: 2)
}

extension ProtoMessage {
    /// The proto3 canonical JSON of the message.
    public func jsonString(options: JSONEncodingOptions = .compact) throws -> String {
        try withCMessage { message in
            ProtoJSONEncoder.object(
                UnsafeRawPointer(message), Self._protobufC.pointer, emitDefaults: options.emitDefaults
            ).text(indent: options.indent)
        }
    }

    /// The proto3 canonical JSON of the message, as a value to inspect or change before it is written.
    public func jsonValue() throws -> JSONValue {
        try withCMessage { message in ProtoJSONEncoder.object(UnsafeRawPointer(message), Self._protobufC.pointer) }
    }

    /// Parses proto3 JSON. Throws `WireError.invalidJSON` naming the field for any text that does not fit.
    public init(jsonString: String) throws {
        try self.init(jsonUTF8: Array(jsonString.utf8))
    }

    /// Parses proto3 JSON given as UTF-8 bytes.
    public init(jsonUTF8 bytes: [UInt8]) throws {
        let json = try JSONParser.parse(bytes)
        let arena = ProtoArena()
        let descriptor = Self._protobufC.pointer
        let message = try ProtoJSONDecoder(arena: arena).message(json, descriptor)
        let reader = _ProtoReader(message: UnsafeRawPointer(message), descriptor: descriptor)
        do {
            try self.init(_protoReader: reader)
        } catch let error as WireError where error.code == .invalidMessage || error.code == .unreadableValue {
            throw WireError(.invalidJSON, error.message)
        }
        withExtendedLifetime(arena) {}
    }
}

extension ProtoRegistry {
    /// The generated message type with the fully-qualified proto name `name` (for example `tokenet.wire.v1.Frame`).
    public static func messageType(named name: String) -> (any ProtoMessage.Type)? {
        messages.first { $0.protoName == name }
    }

    /// The generated service with the fully-qualified name `name`.
    public static func service(named name: String) -> ServiceDescriptor? {
        services.first { $0.name == name }
    }
}
