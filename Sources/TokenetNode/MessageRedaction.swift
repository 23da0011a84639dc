import TokenetWire

/// What a message's line at `trace` leaves out: the secrets messages carry in clear between the parties and the
/// operator (one-time and HOTP codes, activation codes, PINs, credential secrets, access tokens, a typed-in card's
/// security code). A log is read by more people than the parties' own stores, and those values would let a reader
/// finish a step-up, log in as a cardholder or pass a card check. A card number keeps its last four digits, as on
/// every line. So does an issuer's push receipt (`payload`), which adds the card to whichever wallet redeems it first
/// when it names no wallet account or node. A private key sent by mistake is left out whole.
enum MessageRedaction {
    /// The JSON names of the fields whose values never reach a log.
    static let secretFields: Set<String> = [
        "accessToken", "activationCode", "code", "cvc", "deviceCode", "firstCode", "link", "payload", "pin",
        "secondCode", "secret", "userCode",
    ]

    /// The methods whose responses are the simulated deliveries of those codes (the issuer's outbox: each message's
    /// text holds its code or its otp:// link), logged without their bodies.
    static let deliveryMethods: Set<String> = ["/tokenet.issuer.v1.IssuerCallCentre/Outbox"]

    /// `value` with every secret field's value (at any depth, in lists too) replaced by `"(secret)"`, every `pan`
    /// field's value by its last four digits behind asterisks, and card numbers in other strings masked.
    static func redacted(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            return .object(
                members.map { member in
                    if member.key == "pan", case .string(let pan) = member.value {
                        return (member.key, .string(maskedPAN(pan)))
                    }
                    if secretFields.contains(member.key), !isEmpty(member.value) {
                        return (member.key, .string("(secret)"))
                    }
                    return (member.key, redacted(member.value))
                })
        case .array(let elements):
            return .array(elements.map(redacted))
        case .string(let text) where text.contains("PRIVATE KEY-----"):
            // A private key sent by mistake where a public one goes (RegisterIssuer's encryption key): refused,
            // and not to be copied into the log for every reader of it.
            return .string("(not shown: a private key)")
        case .string(let text):
            // Masked before the JSON is written: written first, a tab or a line break between the groups of a card
            // number becomes `\t` or `\n`, which the line's own masking does not take for a separator.
            return .string(maskPAN(text))
        default:
            return value
        }
    }

    /// An empty value says the field was not set, which is worth seeing and gives nothing away.
    private static func isEmpty(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): text.isEmpty
        case .array(let elements): elements.isEmpty
        case .null: true
        default: false
        }
    }

    /// The digits of a typed card number masked but for the last four; whatever else was typed is left out.
    private static func maskedPAN(_ pan: String) -> String {
        let digits = pan.unicodeScalars.filter { ("0"..."9").contains($0) }
        guard digits.count > 4 else { return String(repeating: "*", count: digits.count) }
        return String(repeating: "*", count: digits.count - 4) + String(String.UnicodeScalarView(digits.suffix(4)))
    }
}
