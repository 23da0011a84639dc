import Foundation
import TokenetCard
import TokenetNode

extension IssuerFixture {
    /// Reads, parses and validates a fixture file.
    public static func load(path: String) throws(IssuerError) -> IssuerFixture {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            // Named by its flag, with what to give, as a directory is: "the fixture file" named neither.
            throw IssuerError(
                .fixture,
                "--fixtures \(path) does not exist; give the fixture's JSON file, such as Tools/fixtures/issuer.json")
        }
        // Foundation's error for a directory is `NSCocoaErrorDomain Code=256 "(null)"` with "Is a directory" deep in
        // its user info.
        guard !isDirectory.boolValue else {
            throw IssuerError(
                .fixture,
                "--fixtures \(path) is a directory; give the fixture's JSON file, such as Tools/fixtures/issuer.json")
        }
        // Foundation reads only regular files, and says "Permission denied" of a pipe or a device, even to root.
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            let what =
                status.st_mode & S_IFMT == S_IFIFO
                ? "a pipe (a FIFO, or a shell's <(…))" : status.st_mode & S_IFMT == S_IFSOCK ? "a socket" : "a device"
            throw IssuerError(
                .fixture,
                "--fixtures \(path) is \(what), not a file; write the fixture's JSON to a file and give that, such as "
                    + "Tools/fixtures/issuer.json")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw IssuerError(.fixture, "cannot read the fixture file \(path)", cause: DescribedError(error))
        }
        do {
            return try parse(data)
        } catch {
            throw IssuerError(.fixture, "\(path): \(error.message)")
        }
    }

    /// Parses and validates fixture JSON. Errors name the entry at fault (`cards[2] "card-x": …`) and never
    /// quote a card number.
    public static func parse(_ data: Data) throws(IssuerError) -> IssuerFixture {
        // The strict check comes first: it says where the JSON goes wrong (Foundation's decoder does not).
        if let problem = StrictJSON.problem(in: data) { throw IssuerError(.fixture, problem) }
        let fixture: IssuerFixture
        do {
            fixture = try JSONDecoder().decode(IssuerFixture.self, from: data)
        } catch let error as DecodingError {
            throw IssuerError(.fixture, Self.describe(error))
        } catch {
            throw IssuerError(.fixture, "the fixture is not valid JSON")
        }
        try checkKeys(data)
        try fixture.validate()
        return fixture
    }

    /// Says where a JSON document does not match the fixture's shape, without echoing any values.
    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            var text = ""
            for key in codingPath {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
                }
            }
            return text.isEmpty ? "the top level" : text
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.isEmpty ? "the top level" : path(context.codingPath)
            return "\(parent): missing \"\(key.stringValue)\""
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(Self.jsonKind(type))"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)): expected \(Self.jsonKind(type)), got null"
        case .dataCorrupted(let context):
            // The JSON itself was checked before (`StrictJSON`): what is left is a value that does not fit, such as
            // 2.5 where an integer goes, which Foundation reports without its place.
            if context.codingPath.isEmpty { return "a value does not fit the fixture: \(context.debugDescription)" }
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "the fixture does not have the expected shape"
        }
    }

    private static func jsonKind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type: return "an integer"
        case is [Any].Type: return "an array"
        default: return "an object"
        }
    }
}

extension IssuerFixture {
    /// The most BIN ranges the TSP registers for one issuer (`RegisterIssuer`).
    static let maxBINRanges = 1_000

    /// The longest texts the parties carry in their messages, in characters: a decline reason of 5 MiB loaded, made
    /// the issuer's answer larger than a message may be, and the TSP's stand-in approved the card the fixture said
    /// to decline.
    static let maxNameLength = 100
    static let maxContactLength = 254
    /// The most digits a phone number has (E.164: country code and national number together).
    static let maxPhoneDigits = 15
    static let maxReasonLength = 500
    static let maxAppTextLength = 256

    /// "\"key\" has N characters; at most M" when `text` is longer than `maximum`; nil otherwise.
    /// Bytes are bounded too (four per character): one character may carry any number of combining marks.
    static func tooLong(_ key: String, _ text: String?, _ maximum: Int) -> String? {
        guard let text else { return nil }
        if text.count > maximum {
            return "\"\(key)\" has \(text.count) characters; at most \(maximum): the parties carry it in their messages"
        }
        guard text.utf8.count > maximum * 4 else { return nil }
        return
            "\"\(key)\" has \(text.utf8.count) bytes of UTF-8; at most \(maximum * 4): the parties carry it in their "
            + "messages"
    }

    /// Checks what JSON decoding cannot: references between entries, unique ids, valid card numbers inside the
    /// issuer's BIN ranges, expiries, codes and complete rules.
    public func validate() throws(IssuerError) {
        func fail(_ entry: String, _ message: String) -> IssuerError {
            IssuerError(.fixture, "\(entry): \(message)")
        }
        guard !issuer.id.isEmpty else { throw fail("issuer", "\"id\" is empty") }
        guard !issuer.name.isEmpty else { throw fail("issuer", "\"name\" is empty") }
        // As the TSP registers an issuer: a fixture it would refuse loaded, and the node said READY and then
        // retried its registration for ever.
        if let problem = IdentifierRules.problem(issuer.id) { throw fail("issuer", "\"id\" must be \(problem)") }
        if let problem = IdentifierRules.problem(issuer.name, maxLength: 100, spaces: true) {
            throw fail("issuer", "\"name\" must be \(problem)")
        }
        if let problem = Self.tooLong("callCenterNumber", issuer.callCenterNumber, Self.maxContactLength) {
            throw fail("issuer", problem)
        }
        // Shown to the cardholder as an ID&V method's value: no card number.
        if let number = issuer.callCenterNumber, IdentifierRules.holdsCardNumber(identifier: number) {
            throw fail("issuer", "\"callCenterNumber\" holds a card number, which the wallet would show in full")
        }
        guard !issuer.binRanges.isEmpty else { throw fail("issuer", "\"binRanges\" is empty") }
        guard issuer.binRanges.count <= Self.maxBINRanges else {
            throw fail(
                "issuer",
                "\"binRanges\" holds \(issuer.binRanges.count) ranges; the TSP takes at most \(Self.maxBINRanges): "
                    + "join adjacent prefixes into wider ranges")
        }
        for (index, range) in issuer.binRanges.enumerated() {
            let entry = "issuer.binRanges[\(index)]"
            let digits = { (text: String) in !text.isEmpty && text.utf8.allSatisfy { (48...57).contains($0) } }
            guard digits(range.low), digits(range.high), (4...11).contains(range.low.count) else {
                throw fail(entry, "low and high must be 4 to 11 digits")
            }
            guard range.low.count == range.high.count else { throw fail(entry, "low and high differ in length") }
            guard range.low <= range.high else { throw fail(entry, "low is above high") }
            // Two ranges claiming one card number leave it unclear which the issuer meant, and the TSP routes by
            // the first that matches: a range given twice, or inside another, is a mistake in the file.
            for (earlierIndex, earlier) in issuer.binRanges[..<index].enumerated() where earlier.overlaps(range) {
                func span(_ range: BINRange) -> String { "\(range.low) to \(range.high)" }
                throw fail(
                    entry,
                    "\(span(range)) overlaps issuer.binRanges[\(earlierIndex)] (\(span(earlier))); each prefix "
                        + "belongs in one range only")
            }
        }

        var cardholderIDs: Set<String> = []
        for (index, holder) in cardholders.enumerated() {
            let entry = "cardholders[\(index)] \"\(holder.id)\""
            guard !holder.id.isEmpty else { throw fail("cardholders[\(index)]", "\"id\" is empty") }
            if let problem = IdentifierRules.problem(holder.id) {
                throw fail("cardholders[\(index)]", "\"id\" must be \(problem)")
            }
            guard cardholderIDs.insert(holder.id).inserted else { throw fail(entry, "the id is used twice") }
            guard !holder.name.isEmpty else { throw fail(entry, "\"name\" is empty") }
            for (key, text, maximum) in [
                ("name", holder.name, Self.maxNameLength), ("phone", holder.phone, Self.maxContactLength),
                ("email", holder.email, Self.maxContactLength),
            ] {
                if let problem = Self.tooLong(key, text, maximum) { throw fail(entry, problem) }
            }
            guard !IdentifierRules.holdsCardNumber(identifier: holder.name) else {
                throw fail(entry, "\"name\" holds a card number, which the parties would show in full")
            }
            // The contact fields are stored as they are: no card number in them either. (The phone is checked below
            // by its digits: a phone number of 13 to 15 digits in groups reads as one to `holdsCardNumber`.)
            guard !IdentifierRules.holdsCardNumber(identifier: holder.email) else {
                throw fail(entry, "\"email\" holds a card number, which the issuer would store in the clear")
            }
            let phoneDigits = String(holder.phone.filter(\.isNumber))
            guard phoneDigits.count >= 4 else { throw fail(entry, "\"phone\" needs at least four digits") }
            // Card numbers of 16 to 19 digits are longer than any phone number; one of 13 to 15 is refused when its
            // digits make a valid card number of a scheme the TSP takes.
            guard phoneDigits.count <= Self.maxPhoneDigits else {
                throw fail(
                    entry,
                    "\"phone\" has \(phoneDigits.count) digits; a phone number has at most \(Self.maxPhoneDigits) (E.164)"
                )
            }
            if let number = try? PAN(phoneDigits), number.scheme.isEligible {
                throw fail(entry, "\"phone\" holds a card number, which the issuer would store in the clear")
            }
            guard Masking.email(holder.email) != nil else { throw fail(entry, "\"email\" is not an email address") }
        }

        var accountIDs: Set<String> = []
        for (index, account) in accounts.enumerated() {
            let entry = "accounts[\(index)] \"\(account.id)\""
            guard !account.id.isEmpty else { throw fail("accounts[\(index)]", "\"id\" is empty") }
            if let problem = IdentifierRules.problem(account.id) {
                throw fail("accounts[\(index)]", "\"id\" must be \(problem)")
            }
            guard accountIDs.insert(account.id).inserted else { throw fail(entry, "the id is used twice") }
            guard cardholderIDs.contains(account.cardholderId) else {
                throw fail(entry, "cardholder \"\(account.cardholderId)\" is not in \"cardholders\"")
            }
        }

        var cardIDs: Set<String> = []
        var numbers: Set<String> = []
        for (index, card) in cards.enumerated() {
            let entry = "cards[\(index)] \"\(card.id)\""
            guard !card.id.isEmpty else { throw fail("cards[\(index)]", "\"id\" is empty") }
            // Ids are shown in full in listings and logs, and typed on command lines.
            if let problem = IdentifierRules.problem(card.id) {
                throw fail("cards[\(index)]", "\"id\" must be \(problem)")
            }
            guard cardIDs.insert(card.id).inserted else { throw fail(entry, "the id is used twice") }
            guard accountIDs.contains(card.accountId) else {
                throw fail(entry, "account \"\(card.accountId)\" is not in \"accounts\"")
            }
            let pan: PAN
            do {
                pan = try PAN(card.pan)
            } catch {
                throw fail(entry, "the card number is not valid (\(error.rejection?.message ?? error.message))")
            }
            guard pan.scheme.isEligible else { throw fail(entry, "the card number is neither Visa nor Mastercard") }
            guard issuer.binRanges.contains(where: { $0.contains(pan.digits) }) else {
                throw fail(entry, "the card number ending \(pan.last4) is outside the issuer's BIN ranges")
            }
            guard numbers.insert(pan.digits).inserted else {
                throw fail(entry, "the card number ending \(pan.last4) is used by another card")
            }
            do {
                _ = try CardExpiry(parsing: card.expiry)
            } catch {
                throw fail(entry, "\"expiry\" must be MM/YY")
            }
            guard (3...4).contains(card.cvc.count), card.cvc.allSatisfy(\.isASCII), card.cvc.allSatisfy(\.isNumber)
            else { throw fail(entry, "\"cvc\" must be 3 or 4 digits") }
            guard !card.cardholderName.isEmpty else { throw fail(entry, "\"cardholderName\" is empty") }
            for (key, text, maximum) in [
                ("cardholderName", card.cardholderName, Self.maxNameLength),
                ("notEligibleReason", card.notEligibleReason, Self.maxReasonLength),
            ] {
                if let problem = Self.tooLong(key, text, maximum) { throw fail(entry, problem) }
            }
            if let reason = card.notEligibleReason, reason.isEmpty {
                throw fail(entry, "\"notEligibleReason\" is empty; leave it out for an eligible card")
            }
            // Texts the parties show in full (a decline's reason reaches the wallet's screen): no card number.
            for (key, text) in [("cardholderName", card.cardholderName), ("notEligibleReason", card.notEligibleReason)]
            where text.map(IdentifierRules.holdsCardNumber(identifier:)) == true {
                throw fail(entry, "\"\(key)\" holds a card number, which the parties would show in full")
            }
            try Self.validate(card.digitization, entry: "\(entry) digitization", fail: fail)
        }
    }

    private static func validate(
        _ rule: DigitizationRule, entry: String, fail: (String, String) -> IssuerError
    ) throws(IssuerError) {
        func validate(_ idv: [IdvMethodSpec]) throws(IssuerError) {
            guard !idv.isEmpty else { throw fail(entry, "\"idv\" needs at least one method") }
            // A method's id is its type's (otp-sms, app-to-app…): a type listed twice was offered twice under one id.
            var types: Set<String> = []
            for (index, method) in idv.enumerated() where !types.insert("\(method.type)").inserted {
                throw fail(
                    "\(entry).idv[\(index)]",
                    "\(method.type.rawValue) is listed twice; the wallet offers one method of each type, under the "
                        + "type's id")
            }
            for (index, method) in idv.enumerated() where method.type == .appToApp {
                guard !(method.appIdentifier ?? "").isEmpty, !(method.appAction ?? "").isEmpty else {
                    throw fail("\(entry).idv[\(index)]", "APP_TO_APP needs \"appIdentifier\" and \"appAction\"")
                }
                for (key, text) in [
                    ("appName", method.appName), ("appIdentifier", method.appIdentifier),
                    ("appAction", method.appAction),
                ] {
                    if let problem = Self.tooLong(key, text, Self.maxAppTextLength) {
                        throw fail("\(entry).idv[\(index)]", problem)
                    }
                }
                // The wallet shows the app's name as the method's value, and its identifier and action as they are.
                for (key, text) in [
                    ("appName", method.appName), ("appIdentifier", method.appIdentifier),
                    ("appAction", method.appAction),
                ] where text.map(IdentifierRules.holdsCardNumber(identifier:)) == true {
                    throw fail(
                        "\(entry).idv[\(index)]", "\"\(key)\" holds a card number, which the wallet would show in full")
                }
            }
        }
        switch rule {
        case .approve:
            break
        case .decline(let reason):
            guard !reason.isEmpty else { throw fail(entry, "a decline needs a \"reason\"") }
            if let problem = Self.tooLong("reason", reason, Self.maxReasonLength) { throw fail(entry, problem) }
            guard !IdentifierRules.holdsCardNumber(identifier: reason) else {
                throw fail(entry, "the decline's \"reason\" holds a card number, which the wallet would show in full")
            }
        case .stepUp(let idv):
            try validate(idv)
        case .byScore(let approveAtMost, let stepUpAtMost, let idv, let declineReason):
            if let problem = Self.tooLong("declineReason", declineReason, Self.maxReasonLength) {
                throw fail(entry, problem)
            }
            if let declineReason, IdentifierRules.holdsCardNumber(identifier: declineReason) {
                throw fail(entry, "\"declineReason\" holds a card number, which the wallet would show in full")
            }
            guard (1...5).contains(approveAtMost), (approveAtMost...5).contains(stepUpAtMost) else {
                throw fail(entry, "scores run from 1 to 5 and need 1 <= approveAtMost <= stepUpAtMost <= 5")
            }
            try validate(idv)
        }
    }
}
