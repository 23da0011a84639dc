import TokenetWire

/// The reflection service (`tokenet.reflection.v1.Reflection`): which services a node serves and what their methods
/// and messages look like, so a client holding no `.proto` files can build a request from JSON.
///
/// It describes only what the router routes (build it after registering health) plus itself: a node does not
/// advertise services it does not run, and a message or enum is describable only when a served method reaches it
/// through its fields.
public struct ReflectionService: Sendable {
    /// The served services, sorted by name, each with only the methods the router routes.
    public let services: [ServiceDescriptor]
    private let messages: [String: any ProtoMessage.Type]
    private let enums: [String: ReflectionV1.EnumDescription]

    /// Describes the methods `router` routes, plus this service.
    public init(router: RPCRouter) {
        let routed = Set(router.routes.keys)
        var services: [ServiceDescriptor] = []
        for name in router.serviceNames.union([ReflectionV1.Reflection.serviceName]) {
            // Routes come from generated method descriptors, so every routed service is in the registry.
            guard let service = ProtoRegistry.service(named: name) else { continue }
            let isSelf = name == ReflectionV1.Reflection.serviceName
            let methods = service.methods.filter { isSelf || routed.contains($0.path) }
            services.append(ServiceDescriptor(name: name, methods: methods))
        }
        self.services = services.sorted { $0.name < $1.name }
        let roots = self.services.flatMap { $0.methods.flatMap { [$0.request, $0.response] } }
        let reachable = Self.reachableMessages(from: roots)
        messages = Dictionary(reachable.map { ($0.protoName, $0) }, uniquingKeysWith: { first, _ in first })
        var enums: [String: ReflectionV1.EnumDescription] = [:]
        for message in reachable {
            for field in message.protoFields where field.kind == .enumeration {
                enums[field.typeName] = ReflectionV1.EnumDescription(
                    name: field.typeName,
                    values: field.enumValues.map { Self.describeEnumValue($0, of: field.typeName) },
                    comment: Self.comment(field.typeName))
            }
        }
        self.enums = enums
    }

    /// Registers ListServices and DescribeSymbol; any authenticated peer may ask.
    public func register(on router: inout RPCRouter) {
        router.unary(ReflectionV1.Reflection.listServices) { [self] _, _ in
            ReflectionV1.ListServicesResponse(services: services.map(\.name))
        }
        router.unary(ReflectionV1.Reflection.describeSymbol) { [self] request, _ in
            try describe(symbol: request.symbol)
        }
    }

    // MARK: - Describing

    /// Resolves `symbol` (service, method as `pkg.Service.Method` or `/pkg.Service/Method`, message or enum).
    public func describe(symbol: String) throws(RPCError) -> ReflectionV1.DescribeSymbolResponse {
        let symbol = symbol.trimmingPrefix("/")
        guard !symbol.isEmpty else {
            throw RPCError(.invalidArgument, "the symbol is empty; name a service, method, message or enum")
        }
        if let slash = symbol.lastIndex(of: "/") {
            return try describeMethod(
                service: String(symbol[..<slash]), method: String(symbol[symbol.index(after: slash)...]),
                symbol: String(symbol))
        }
        if let service = services.first(where: { $0.name == symbol }) {
            return ReflectionV1.DescribeSymbolResponse(
                kind: .service, name: service.name, service: Self.describe(service),
                messages: describeMessages(service.methods.flatMap { [$0.request, $0.response] }),
                enums: describeEnums(of: service.methods.flatMap { [$0.request, $0.response] }))
        }
        if let message = messages[String(symbol)] {
            return ReflectionV1.DescribeSymbolResponse(
                kind: .message, name: message.protoName, messages: describeMessages([message]),
                enums: describeEnums(of: [message]))
        }
        if let described = enums[String(symbol)] {
            return ReflectionV1.DescribeSymbolResponse(kind: .enum, name: described.name, enums: [described])
        }
        if let dot = symbol.lastIndex(of: ".") {
            return try describeMethod(
                service: String(symbol[..<dot]), method: String(symbol[symbol.index(after: dot)...]),
                symbol: String(symbol))
        }
        throw Self.notFound(String(symbol))
    }

    private func describeMethod(service name: String, method: String, symbol: String) throws(RPCError)
        -> ReflectionV1.DescribeSymbolResponse
    {
        guard let service = services.first(where: { $0.name == name }),
            let method = service.method(named: method)
        else { throw Self.notFound(symbol) }
        let one = ServiceDescriptor(name: service.name, methods: [method])
        return ReflectionV1.DescribeSymbolResponse(
            kind: .method, name: "\(service.name).\(method.name)", service: Self.describe(one),
            messages: describeMessages([method.request, method.response]),
            enums: describeEnums(of: [method.request, method.response]))
    }

    private static func notFound(_ symbol: String) -> RPCError {
        RPCError(.notFound, "this node serves no service, method, message or enum named '\(RPCServer.shown(symbol))'")
    }

    private func describeMessages(_ roots: [any ProtoMessage.Type]) -> [ReflectionV1.MessageDescription] {
        Self.reachableMessages(from: roots).map { message in
            ReflectionV1.MessageDescription(
                name: message.protoName,
                fields: message.protoFields.map { Self.describeField($0, of: message.protoName) },
                comment: Self.comment(message.protoName))
        }
    }

    private func describeEnums(of roots: [any ProtoMessage.Type]) -> [ReflectionV1.EnumDescription] {
        var names: [String] = []
        for message in Self.reachableMessages(from: roots) {
            for field in message.protoFields where field.kind == .enumeration && !names.contains(field.typeName) {
                names.append(field.typeName)
            }
        }
        return names.compactMap { enums[$0] }
    }

    /// `roots` and every message their fields reach, each once, in breadth-first order.
    static func reachableMessages(from roots: [any ProtoMessage.Type]) -> [any ProtoMessage.Type] {
        var seen: Set<String> = []
        var queue = roots
        var result: [any ProtoMessage.Type] = []
        while !queue.isEmpty {
            let message = queue.removeFirst()
            guard seen.insert(message.protoName).inserted else { continue }
            result.append(message)
            for field in message.protoFields where field.kind == .message {
                if let type = ProtoRegistry.messageType(named: field.typeName) { queue.append(type) }
            }
        }
        return result
    }

    static func describe(_ service: ServiceDescriptor) -> ReflectionV1.ServiceDescription {
        ReflectionV1.ServiceDescription(
            name: service.name,
            methods: service.methods.map { method in
                ReflectionV1.MethodDescription(
                    name: method.name, path: method.path, requestType: method.request.protoName,
                    responseType: method.response.protoName, clientStreaming: method.kind.clientStreams,
                    serverStreaming: method.kind.serverStreams, comment: comment("\(service.name).\(method.name)"),
                    allowedRoles: method.allowedRoles, noSideEffects: method.hasNoSideEffects)
            }, comment: comment(service.name))
    }

    static func describeField(_ field: ProtoFieldInfo, of message: String) -> ReflectionV1.FieldDescription {
        let label: ReflectionV1.FieldLabel =
            switch field.cardinality {
            case .singular: .singular
            case .optional: .optional
            case .repeated: .repeated
            }
        let kind: ReflectionV1.FieldTypeKind =
            switch field.kind {
            case .scalar: .scalar
            case .message: .message
            case .enumeration: .enum
            }
        return ReflectionV1.FieldDescription(
            name: field.name, jsonName: field.jsonName, number: field.number, type: field.typeName, typeKind: kind,
            label: label, oneofIndex: field.oneofIndex.map(UInt32.init), oneofName: field.oneofName ?? "",
            enumValues: field.enumValues.map { describeEnumValue($0, of: field.typeName) },
            comment: comment("\(message).\(field.name)"))
    }

    static func describeEnumValue(_ value: (name: String, number: Int32), of enumName: String)
        -> ReflectionV1.EnumValueDescription
    {
        ReflectionV1.EnumValueDescription(
            name: value.name, number: value.number, comment: comment("\(enumName).\(value.name)"))
    }

    /// The `.proto` comment of a symbol, by fully-qualified name; empty without one.
    static func comment(_ symbol: String) -> String {
        ProtoRegistry.comments[symbol] ?? ""
    }
}
