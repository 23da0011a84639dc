import TokenetWire

/// `expect [within DURATION] CODE [JSON | TEXT]`: the status a call must end with and, for OK, an object its last
/// response must contain, or for another code a part of the status message. A call without an `expect` line must
/// end OK.
public struct ScenarioExpectation: Sendable, Equatable {
    public var code: WireV1.StatusCode
    /// For OK: the object the last response must contain, as written (`${NAME}`s not yet filled in).
    public var contains: String?
    /// For other codes: text the status message must contain, as written.
    public var messageContains: String?
    /// The call is made again (every `retryInterval`) until the outcome matches, for up to this long: for what other
    /// parties do in the background, such as a notification reaching the wallet.
    public var within: Duration?
    /// The `expect` line, or nil when the call has none.
    public var line: Int?

    public init(
        code: WireV1.StatusCode = .ok, contains: String? = nil, messageContains: String? = nil,
        within: Duration? = nil, line: Int? = nil
    ) {
        self.code = code
        self.contains = contains
        self.messageContains = messageContains
        self.within = within
        self.line = line
    }

    /// How long a call that did not match yet waits before it is made again under `within`.
    public static let retryInterval = Duration.milliseconds(200)

    /// What a call ended with: its status and the responses that arrived before it.
    public struct Outcome: Sendable {
        public var code: WireV1.StatusCode
        public var message: String
        public var responses: [JSONValue]
        /// The method's response type, when the call got as far as knowing it: an expected object is checked
        /// against it, so that a field it does not have or a value of the wrong kind is the script's error.
        public var responseType: (any ProtoMessage.Type)?

        public init(
            code: WireV1.StatusCode, message: String, responses: [JSONValue],
            responseType: (any ProtoMessage.Type)? = nil
        ) {
            self.code = code
            self.message = message
            self.responses = responses
            self.responseType = responseType
        }
    }

    /// Why `outcome` does not meet the expectation, or nil when it does. `variables` fill in the `${NAME}`s first;
    /// a JSON text that is still not an object after that throws (the `expect` line is wrong, not the call).
    ///
    /// `mask` is how the nodes mask card numbers in what they send: a status message that quotes a card number has
    /// it masked, so expected text that holds one is looked for masked the same way, or it could never match.
    public func mismatch(
        _ outcome: Outcome, variables: ScenarioVariables, mask: (String) -> String = { $0 }
    ) throws(ScenarioError) -> String? {
        guard outcome.code == code else {
            let got = outcome.message.isEmpty ? outcome.code.name : "\(outcome.code.name): \(outcome.message)"
            return "expected \(code.name), got \(got)"
        }
        if let messageContains {
            let text = try variables.fill(messageContains, inJSON: false)
            let masked = mask(text)
            guard outcome.message.contains(text) || outcome.message.contains(masked) else {
                let note = masked == text ? "" : " (card numbers are looked for masked, as nodes send them)"
                return "expected the \(code.name) message to contain \"\(text)\"\(note), got \"\(outcome.message)\""
            }
        }
        if let contains {
            let filled = try variables.fill(contains, inJSON: true)
            var expected = try Self.object(filled)
            if let type = outcome.responseType {
                try Self.check(filled, fits: type)
                expected = expected.withIntegersAsNumbers(for: type)
            }
            guard var last = outcome.responses.last else { return "expected a response, got none" }
            if let type = outcome.responseType { last = last.withEnumDefaults(for: type) }
            if let reason = last.mismatch(containing: expected) { return reason }
        }
        return nil
    }

    /// Throws when `text` is not a (partial) `type` in proto3 JSON: a misspelt field (`"eligble"`), an object where
    /// the type has a list (`"tokens": {}`), an enum value it does not have. Such an expectation was met by any
    /// response, since a field a response does not hold matches its default, and the script passed without
    /// checking what it meant to.
    public static func check(_ text: String, fits type: any ProtoMessage.Type) throws(ScenarioError) {
        do {
            _ = try type.init(jsonString: text)
        } catch let error as WireError {
            throw ScenarioError(.syntax, "the expected object is not a \(type.protoName): \(error.message)")
        } catch {
            throw ScenarioError(.syntax, "the expected object is not a \(type.protoName): \(error)")
        }
    }

    /// Parses the JSON an `expect OK` line gives; it must be one object.
    public static func object(_ text: String) throws(ScenarioError) -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text)
        } catch {
            throw ScenarioError(.syntax, "expect OK takes one JSON object; \(error.message)")
        }
        guard case .object = value else {
            throw ScenarioError(.syntax, "expect OK takes a JSON object, not \(value.kindName)")
        }
        return value
    }
}

extension WireV1.StatusCode {
    /// The code's name as scripts and the CLI write it (`NOT_FOUND`), or `CODE_N` for one this build does not know.
    public var name: String { protoValueName ?? "CODE_\(rawValue)" }

    /// The code a script names, in any case.
    public init?(name: String) {
        let upper = name.uppercased()
        guard let code = Self.knownCases.first(where: { $0.protoValueName == upper }) else { return nil }
        self = code
    }
}
