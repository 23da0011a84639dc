import TokenetWire

/// Renders a reflection description as a `.proto`-like listing, the way `tokenet describe` prints it.
///
/// Names are fully qualified everywhere, so any name in the listing can be passed to `tokenet describe` again.
/// protobuf-c records no oneof names, so an unnamed oneof shows as `oneof #N`.
///
/// Every name is the node's, written with its control characters escaped, line breaks included (`shown`): whatever
/// answers at the address may name a field `x;\n}\nmessage …`, and the listing would show lines the node never
/// described as such. The `.proto` comments the node sends are written above what they describe, each of their lines
/// after `// ` with its control characters escaped, so a comment cannot end itself either.
enum SymbolDescriptionText {
    /// A name as the listing writes it: on one line, without any escape sequence acting on the terminal.
    static func shown(_ name: String) -> String { shownName(name) }

    static func render(_ description: ReflectionV1.DescribeSymbolResponse) -> String {
        var blocks: [String] = []
        let kind =
            switch description.kind {
            case .service: "a service"
            case .method: "a method"
            case .message: "a message"
            case .enum: "an enum"
            default: "a symbol"
            }
        var header = "\(shown(description.name)) is \(kind):"
        if let service = description.service {
            if description.kind == .method, let method = service.methods.first {
                let lines =
                    commentLines(method.comment, indent: "") + [
                        rpcLine(method, indent: "", trailing: "  // " + shown(method.path))
                    ]
                header += "\n" + lines.joined(separator: "\n")
            } else {
                blocks.append(render(service))
            }
        }
        blocks.insert(header, at: 0)
        blocks += description.messages.map(render)
        blocks += description.enums.map(render)
        return blocks.joined(separator: "\n\n")
    }

    static func render(_ service: ReflectionV1.ServiceDescription) -> String {
        var lines = commentLines(service.comment, indent: "") + ["service \(shown(service.name)) {"]
        for method in service.methods {
            lines += commentLines(method.comment, indent: "  ") + [rpcLine(method, indent: "  ")]
        }
        return (lines + ["}"]).joined(separator: "\n")
    }

    /// A `.proto` comment as `// ` lines at `indent`; none for an empty one.
    static func commentLines(_ comment: String, indent: String) -> [String] {
        guard !comment.isEmpty else { return [] }
        return comment.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.isEmpty ? indent + "//" : indent + "// " + shownName(String(line))
        }
    }

    /// `rpc Check(tokenet.health.v1.HealthCheckRequest) returns (stream tokenet.health.v1.HealthCheckResponse);`,
    /// with the roles that may call it as the `.proto` declares them: without them a wallet's developer learnt from
    /// PERMISSION_DENIED which methods were not the wallet's. A method that changes nothing says so, as its
    /// `.proto` does.
    /// `trailing` ends its first line.
    static func rpcLine(_ method: ReflectionV1.MethodDescription, indent: String, trailing: String = "") -> String {
        let request = (method.clientStreaming ? "stream " : "") + shown(method.requestType)
        let response = (method.serverStreaming ? "stream " : "") + shown(method.responseType)
        let line = "\(indent)rpc \(shown(method.name))(\(request)) returns (\(response))"
        let options =
            (method.noSideEffects ? ["\(indent)  option idempotency_level = NO_SIDE_EFFECTS;"] : [])
            + method.allowedRoles.map {
                "\(indent)  option (tokenet.rpc.v1.allowed_roles) = \(shown($0).debugDescription);"
            }
        guard !options.isEmpty else { return line + ";" + trailing }
        return ([line + " {" + trailing] + options + ["\(indent)}"]).joined(separator: "\n")
    }

    static func render(_ message: ReflectionV1.MessageDescription) -> String {
        var lines = commentLines(message.comment, indent: "") + ["message \(shown(message.name)) {"]
        var printedOneofs: Set<UInt32> = []
        for field in message.fields {
            guard let oneof = field.oneofIndex else {
                lines += commentLines(field.comment, indent: "  ") + ["  " + fieldLine(field)]
                continue
            }
            // A oneof's members are listed together where its first member appears.
            guard printedOneofs.insert(oneof).inserted else { continue }
            let name = field.oneofName.isEmpty ? "#\(oneof)" : shown(field.oneofName)
            lines.append("  oneof \(name) {")
            for member in message.fields where member.oneofIndex == oneof {
                lines += commentLines(member.comment, indent: "    ") + ["    " + fieldLine(member)]
            }
            lines.append("  }")
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    /// `optional uint32 stream_id = 1 [json_name = "streamId"];`
    static func fieldLine(_ field: ReflectionV1.FieldDescription) -> String {
        var line = ""
        switch field.label {
        case .repeated: line += "repeated "
        // Message fields and oneof members have presence anyway; `optional` marks the other fields with presence.
        case .optional where field.typeKind != .message && field.oneofIndex == nil: line += "optional "
        default: break
        }
        line += "\(shown(field.type)) \(shown(field.name)) = \(field.number)"
        if field.jsonName != field.name { line += " [json_name = \"\(shown(field.jsonName))\"]" }
        return line + ";"
    }

    static func render(_ description: ReflectionV1.EnumDescription) -> String {
        var lines = commentLines(description.comment, indent: "") + ["enum \(shown(description.name)) {"]
        for value in description.values {
            lines += commentLines(value.comment, indent: "  ") + ["  \(shown(value.name)) = \(value.number);"]
        }
        return (lines + ["}"]).joined(separator: "\n")
    }
}
