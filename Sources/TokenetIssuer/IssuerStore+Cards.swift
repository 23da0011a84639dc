import Foundation
import TokenetCard
import TokenetStorage

extension IssuerStore {
    /// The wallet node the TSP said `digitalCardID` is digitized through (its latest decision that says), or nil
    /// when no decision kept says: a token decided before the TSP sent it, or by the TSP's stand-in.
    func walletNodeID(ofDigitalCardID digitalCardID: String) throws(IssuerError) -> String? {
        try storage("read the token's wallet node") {
            try database.queryOne(
                """
                SELECT wallet_node_id FROM decisions
                WHERE digital_card_id = ? AND wallet_node_id IS NOT NULL AND wallet_node_id != ''
                ORDER BY id DESC LIMIT 1
                """, [digitalCardID]
            )?.text(0)
        }
    }

    private static let cardQuery = """
        SELECT cards.*, cardholders.phone, cardholders.email, issuer_profile.call_center
        FROM cards JOIN accounts ON accounts.id = cards.account_id
        JOIN cardholders ON cardholders.id = accounts.cardholder_id
        LEFT JOIN issuer_profile ON issuer_profile.singleton = 1
        """

    /// The card with this number. Numbers are stored sealed, so candidates sharing the last four digits are
    /// opened and compared; no unsalted digest of a card number is ever stored.
    func card(matching pan: PAN) throws(IssuerError) -> StoredCard? {
        let rows = try storage("look up a card") {
            try database.query("\(Self.cardQuery) WHERE cards.last4 = ? ORDER BY cards.id", [pan.last4])
        }
        for row in rows {
            let card = try storedCard(row)
            if card.pan == pan { return card }
        }
        return nil
    }

    func card(id: String) throws(IssuerError) -> StoredCard? {
        let row = try storage("look up a card") {
            try database.queryOne("\(Self.cardQuery) WHERE cards.id = ?", [id])
        }
        return try row.map { row throws(IssuerError) in try storedCard(row) }
    }

    /// Up to `limit` cards in the order of their ids, starting after the card `after` (from the first card when nil).
    /// A page of a listing: ids are unique and never change, so a card added between two pages is listed once,
    /// in its place, or not at all if its id sorts before the page under way.
    func cards(after: String?, limit: Int) throws(IssuerError) -> [StoredCard] {
        let rows = try storage("list cards") {
            try database.query(
                "\(Self.cardQuery) WHERE cards.id > ? ORDER BY cards.id LIMIT ?", [after ?? "", Int64(limit)])
        }
        var cards: [StoredCard] = []
        for row in rows { cards.append(try storedCard(row)) }
        return cards
    }

    /// Blocks the card with `reason`, or opens it (nil); false when it already had that status.
    func allCards() throws(IssuerError) -> [StoredCard] {
        let rows = try storage("list cards") { try database.query("\(Self.cardQuery) ORDER BY cards.id") }
        var cards: [StoredCard] = []
        for row in rows { cards.append(try storedCard(row)) }
        return cards
    }

    /// Every card's id, last four digits and expiry, read from their clear columns: for checks over all cards (the
    /// expiry warning at start) that need no card number, so nothing is unsealed and a store of many cards is read
    /// in one pass.
    func cardExpiries() throws(IssuerError) -> [(id: String, last4: String, expiry: CardExpiry)] {
        let rows = try storage("list card expiries") {
            try database.query("SELECT id, last4, expiry FROM cards ORDER BY id")
        }
        var expiries: [(id: String, last4: String, expiry: CardExpiry)] = []
        expiries.reserveCapacity(rows.count)
        for row in rows {
            let (id, last4, expiry) = try storage("read a card's expiry") {
                (try row.text("id"), try row.text("last4"), try row.text("expiry"))
            }
            do {
                expiries.append((id, last4, try CardExpiry(parsing: expiry)))
            } catch {
                throw IssuerError(.storage, "card \(id) has an unreadable expiry", cause: IssuerDescribedError(error))
            }
        }
        return expiries
    }

    private func storedCard(_ row: Row) throws(IssuerError) -> StoredCard {
        let fields = try storage("read a card row") {
            (
                id: try row.text("id"), account: try row.text("account_id"),
                pan: try row.get("pan_sealed", as: [UInt8].self),
                cvc: try row.get("cvc_sealed", as: [UInt8].self), expiry: try row.text("expiry"),
                name: try row.text("cardholder_name"),
                notEligible: try row.get("not_eligible_reason", as: String?.self),
                blocked: try row.get("blocked_reason", as: String?.self),
                rule: try row.text("rule"), phone: try row.text("phone"), email: try row.text("email"),
                callCenter: try row.get("call_center", as: String?.self),
                pendingPAN: try row.get("pending_pan_sealed", as: [UInt8]?.self),
                pendingExpiry: try row.get("pending_expiry", as: String?.self),
                pendingSince: try row.get("pending_since_ms", as: Int64?.self)
            )
        }
        let pendingTokens = try pendingTokenChange(row)
        do {
            let pan = try vault.openPAN(fields.pan, recordID: "card:\(fields.id)")
            let cvc = try vault.open(fields.cvc, associatedData: Array("cvc:\(fields.id)".utf8))
            let rule = try storage("decode the rule of card \(fields.id)") {
                try JSONDecoder().decode(DigitizationRule.self, from: Data(fields.rule.utf8))
            }
            var pending: (PendingRenewal, Date)?
            if let sealed = fields.pendingPAN, let expiry = fields.pendingExpiry {
                pending = (
                    PendingRenewal(
                        pan: try vault.openPAN(sealed, recordID: "card:\(fields.id)"),
                        expiry: try CardExpiry(parsing: expiry)),
                    Date(timeIntervalSince1970: Double(fields.pendingSince ?? 0) / 1000)
                )
            }
            return StoredCard(
                id: fields.id, accountID: fields.account, pan: pan, expiry: try CardExpiry(parsing: fields.expiry),
                cvc: String(decoding: cvc, as: UTF8.self), cardholderName: fields.name,
                notEligibleReason: fields.notEligible, blockedReason: fields.blocked, rule: rule,
                contact: CardholderContact(
                    phone: fields.phone, email: fields.email, callCenterNumber: fields.callCenter),
                pendingRenewal: pending, pendingTokenChange: pendingTokens
            )
        } catch let error as IssuerError {
            throw error
        } catch {
            throw IssuerError(
                .keys, "cannot open the sealed data of card \(fields.id)", cause: IssuerDescribedError(error))
        }
    }
}

/// The inputs and result of one digitization decision, as recorded.
struct DecisionRecord: Sendable {
    var cardID: String?
    var last4: String
    var digitalCardID: String
    var tokenLast4: String
    var walletAccountID: String
    var inputMethod: Int
    var deviceID: String
    var deviceType: String
    var risk: RiskScores
    var recommendation: Int
    var rule: String?
    var outcome: DigitizationOutcome
    /// The wallet node the token is digitized through, as the TSP said (`wallet_node_id`); nil when it did not.
    var walletNodeID: String? = nil
    /// The token requestor and token type the wallet gave (empty and 0 when it gave none).
    var tokenRequestorID = ""
    var tokenType = 0
    /// The card's Payment Account Reference the TSP gave (empty when it gave none).
    var paymentAccountReference = ""
}

extension IssuerStore {
    func record(_ decision: DecisionRecord, at date: Date) throws(IssuerError) {
        let idv = try Self.idvMethodsJSON(decision)
        try storage("record a digitization decision") {
            try database.transaction { tx in try Self.insert(decision, idv: idv, at: date, tx) }
        }
    }

    /// Records `decision` unless its token has a decision under the same rule already; whether it recorded it. A
    /// stand-in's advice comes both as a message and in the issuer's check of its tokens with the TSP
    /// (`IssuerTokenSync`), which can read it at the same time: recorded twice, the decisions log showed it twice.
    func recordOnce(_ decision: DecisionRecord, at date: Date) throws(IssuerError) -> Bool {
        let idv = try Self.idvMethodsJSON(decision)
        return try storage("record a digitization decision") {
            try database.transaction { tx in
                guard
                    try tx.queryOne(
                        "SELECT 1 FROM decisions WHERE digital_card_id = ? AND rule IS ?",
                        [decision.digitalCardID, decision.rule]) == nil
                else { return false }
                try Self.insert(decision, idv: idv, at: date, tx)
                return true
            }
        }
    }

    private static func idvMethodsJSON(_ decision: DecisionRecord) throws(IssuerError) -> String {
        guard case .stepUp(let offers) = decision.outcome else { return "[]" }
        return String(decoding: try json(offers.map(\.type.rawValue)), as: UTF8.self)
    }

    private static func insert(_ decision: DecisionRecord, idv: String, at date: Date, _ tx: Transaction) throws {
        let reason: String
        if case .declined(let why) = decision.outcome { reason = why } else { reason = "" }
        _ = try tx.execute(
            """
            INSERT INTO decisions (decided_at, card_id, last4, digital_card_id, token_last4, wallet_account_id,
                input_method, device_id, device_type, account_score, device_score, recommendation, rule,
                decision, reason, idv_methods, wallet_node_id, token_requestor_id, token_type, par)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                timestamp(date), decision.cardID, decision.last4, decision.digitalCardID, decision.tokenLast4,
                decision.walletAccountID, decision.inputMethod, decision.deviceID, decision.deviceType,
                decision.risk.account, decision.risk.device, decision.recommendation, decision.rule,
                decision.outcome.name, reason, idv, decision.walletNodeID, decision.tokenRequestorID,
                decision.tokenType, decision.paymentAccountReference,
            ])
    }

    /// Whether a decision under `rule` is recorded for the token.
    func hasDecision(digitalCardID: String, rule: String) throws(IssuerError) -> Bool {
        try storage("look up the decisions of token \(digitalCardID)") {
            try database.queryOne(
                "SELECT 1 FROM decisions WHERE digital_card_id = ? AND rule = ?", [digitalCardID, rule]) != nil
        }
    }

    /// Whether a decision under another rule than `rule` is recorded for the token: the issuer's own, beside the
    /// stand-in's.
    func hasDecision(digitalCardID: String, otherThan rule: String) throws(IssuerError) -> Bool {
        try storage("look up the decisions of token \(digitalCardID)") {
            try database.queryOne(
                "SELECT 1 FROM decisions WHERE digital_card_id = ? AND (rule IS NULL OR rule != ?)",
                [digitalCardID, rule]) != nil
        }
    }

    func recordPush(cardID: String, mode: String, walletAccountID: String, outcome: String, at date: Date)
        throws(IssuerError)
    {
        _ = try storage("record a push") {
            try database.execute(
                "INSERT INTO pushes (pushed_at, card_id, mode, wallet_account_id, outcome) VALUES (?, ?, ?, ?, ?)",
                [Self.timestamp(date), cardID, mode, walletAccountID, outcome])
        }
    }
}
