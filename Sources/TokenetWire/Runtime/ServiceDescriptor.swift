/// How many messages each side of a call sends.
public enum RPCKind: String, Hashable, Sendable, CaseIterable {
    case unary
    case serverStreaming
    case clientStreaming
    case bidirectionalStreaming

    /// The client may send more than one request.
    public var clientStreams: Bool { self == .clientStreaming || self == .bidirectionalStreaming }
    /// The server may send more than one response.
    public var serverStreams: Bool { self == .serverStreaming || self == .bidirectionalStreaming }
}

/// A method of a generated service, typed by its request and response messages.
///
/// The RPC layer's typed clients and servers are written against these, so a call to the wrong message type does not
/// compile.
public struct MethodDescriptor<Request: ProtoMessage, Response: ProtoMessage>: Hashable, Sendable {
    /// Fully-qualified service name, for example `tokenet.health.v1.Health`.
    public let service: String
    /// Method name as declared, for example `Check`.
    public let name: String
    public let kind: RPCKind
    /// The peer roles the `.proto` allows to call the method (`tokenet.rpc.v1.allowed_roles`); empty for any
    /// authenticated peer.
    public let allowedRoles: [String]
    /// The `.proto` declares that a call changes nothing (`option idempotency_level = NO_SIDE_EFFECTS`): a listing
    /// or a look-up, which a caller may make again at will (a scenario's `expect within` does).
    public let hasNoSideEffects: Bool
    /// The path carried in `CallStart.method`: `/tokenet.health.v1.Health/Check`. Stored, because every call
    /// sends it and building it would allocate a string per call.
    public let path: String

    public init(
        service: String, name: String, kind: RPCKind, allowedRoles: [String] = [], hasNoSideEffects: Bool = false
    ) {
        self.service = service
        self.name = name
        self.kind = kind
        self.allowedRoles = allowedRoles
        self.hasNoSideEffects = hasNoSideEffects
        path = "/\(service)/\(name)"
    }

    /// The same method without its static types, for registries and reflection.
    public var erased: AnyMethodDescriptor {
        AnyMethodDescriptor(
            service: service,
            name: name,
            kind: kind,
            allowedRoles: allowedRoles,
            hasNoSideEffects: hasNoSideEffects,
            request: Request.self,
            response: Response.self
        )
    }
}

/// A method whose message types are known at run time only.
public struct AnyMethodDescriptor: Sendable {
    public let service: String
    public let name: String
    public let kind: RPCKind
    public let allowedRoles: [String]
    public let hasNoSideEffects: Bool
    public let request: any ProtoMessage.Type
    public let response: any ProtoMessage.Type

    public var path: String { "/\(service)/\(name)" }
}

/// A generated service: its name and methods, in declaration order.
public struct ServiceDescriptor: Sendable {
    public let name: String
    public let methods: [AnyMethodDescriptor]

    public init(name: String, methods: [AnyMethodDescriptor]) {
        self.name = name
        self.methods = methods
    }

    public func method(named name: String) -> AnyMethodDescriptor? {
        methods.first { $0.name == name }
    }
}
