import Foundation
import TokenetCard
import TokenetNode
import TokenetStorage
import TokenetWire

/// An eligibility answer the wallet can exchange for a token.
struct EligibilityReceiptRecord: Sendable {
    var receipt: String
    var walletAccountID: String
    var deviceID: String
    var issuerID: String
    var scheme: CardScheme
    var panLast4: String
    var card: CardData
    var inputMethod: CardV1.InputMethod
    /// The T&C id the cardholder must accept; nil when the program has none.
    var termsID: String?
    var expiresAtMs: UInt64
    var usedByRequestID: String?
    /// The wallet node that checked the card's eligibility, the only one that may spend the receipt; nil in
    /// plaintext, and for receipts stored before the TSP kept it (any wallet node spends those, as before).
    var walletNodeID: String? = nil

    /// Refuses a receipt another wallet node checked: every wallet node starts with the same account and device
    /// names, so those alone did not keep one wallet's receipt from another.
    func requireChecked(by walletNodeID: String?) throws {
        try Self.requireChecked(by: walletNodeID, owner: self.walletNodeID)
    }

    /// `requireChecked(by:)` of a receipt whose wallet node is `owner`.
    static func requireChecked(by walletNodeID: String?, owner: String?) throws {
        guard let owner, owner != walletNodeID else { return }
        throw TSPError(
            .permissionDenied,
            "the eligibility receipt was issued to another wallet node; check the card's eligibility from this wallet")
    }
}

/// A token without its numbers, for answers and listings.
struct TokenRecord: Sendable, Equatable {
    var digitalCardID: String
    var scheme: CardScheme
    var tokenLast4: String
    var tokenExpiry: String
    var panLast4: String
    var issuerID: String
    var walletAccountID: String
    var deviceID: String
    var state: TokenLifecycleStateMachine.State
    var decidedBy: String?
    /// The certificate node id of the wallet node that digitized the token: its broker queue is "wallet/ID".
    var walletNodeID: String? = nil
    /// The issuer's account the card belongs to, as the issuer named it in its decision.
    var issuerAccountID: String? = nil
    /// 1 when the token was made, one more at each change of its state (`setState`): sent with the state, so that a
    /// wallet hearing of two changes out of order keeps the later one (`DigitizeResponse.state_version`).
    var stateVersion: UInt64 = 1
    /// The card's Payment Account Reference (`TSPStore+PaymentAccountReference`); nil only until a token made before
    /// PARs were kept is given one, at the next start.
    var paymentAccountReference: String? = nil

    var summary: TspV1.TokenSummary {
        TspV1.TokenSummary(
            digitalCardID: digitalCardID, scheme: scheme.wire, panLast4: panLast4, tokenLast4: tokenLast4,
            state: state.wire, issuerID: issuerID, walletAccountID: walletAccountID, deviceID: deviceID,
            walletNodeID: walletNodeID ?? "", paymentAccountReference: paymentAccountReference ?? "")
    }
}

extension TSPStore {
    /// Which of `ids` are tokens whose digitization waits for the issuer's decision (read through the partial index
    /// `digitize_requests_pending`).
    func awaitingDecision(among ids: [String]) throws -> Set<String> {
        var found: Set<String> = []
        for start in stride(from: 0, to: ids.count, by: 500) {
            let batch = Array(ids[start..<min(start + 500, ids.count)])
            let marks = Array(repeating: "?", count: batch.count).joined(separator: ",")
            for row in try database.query(
                """
                SELECT digital_card_id FROM digitize_requests
                WHERE status = 'pending' AND digital_card_id IN (\(marks))
                """, batch)
            {
                found.insert(try row.text(0))
            }
        }
        return found
    }

    /// Stores the receipt of an eligible card, spending the push receipt or session it came from in the same
    /// transaction: a check that ends before this (its caller gone, its deadline passed) leaves that unused.
    func insertEligibilityReceipt(
        _ record: EligibilityReceiptRecord, spending instrument: RedeemedInstrument = .cardData, nowMs: UInt64
    ) throws {
        let sealed = try seal(record.card, rowID: "receipt:\(record.receipt)")
        try database.transaction { tx in
            try consume(instrument, card: record.card, nowMs: nowMs, in: tx)
            try insertEligibilityReceipt(record, sealed: sealed, nowMs: nowMs, in: tx)
        }
    }

    private func insertEligibilityReceipt(
        _ record: EligibilityReceiptRecord, sealed: [UInt8], nowMs: UInt64, in tx: Transaction
    ) throws {
        _ = try tx.execute(
            """
            INSERT INTO eligibility_receipts (receipt, wallet_account_id, device_id, issuer_id, scheme, pan_last4,
                card_data, input_method, terms_id, created_at_ms, expires_at_ms, wallet_node_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                record.receipt, record.walletAccountID, record.deviceID, record.issuerID, record.scheme.rawValue,
                record.panLast4, sealed, Int(record.inputMethod.rawValue), record.termsID, Int64(nowMs),
                Int64(record.expiresAtMs), record.walletNodeID,
            ])
    }

    func eligibilityReceipt(_ receipt: String, in tx: Transaction) throws -> EligibilityReceiptRecord? {
        guard
            let row = try tx.queryOne(
                """
                SELECT wallet_account_id, device_id, issuer_id, scheme, pan_last4, card_data, input_method, terms_id,
                    expires_at_ms, used_by_request_id, wallet_node_id
                FROM eligibility_receipts WHERE receipt = ?
                """, [receipt])
        else { return nil }
        return EligibilityReceiptRecord(
            receipt: receipt, walletAccountID: try row.text(0), deviceID: try row.text(1), issuerID: try row.text(2),
            scheme: CardScheme(rawValue: try row.text(3)) ?? .other, panLast4: try row.text(4),
            card: try openCard(try row.get(5), rowID: "receipt:\(receipt)"),
            inputMethod: CardV1.InputMethod(rawValue: Int32(try row.int(6))), termsID: try row.get(7),
            expiresAtMs: UInt64(try row.int64(8)), usedByRequestID: try row.get(9), walletNodeID: try row.get(10))
    }

    /// True when `pan` already has a live (active or suspended) token in this wallet account on this device.
    func hasLiveToken(for pan: PAN, walletNodeID: String?, walletAccountID: String, deviceID: String) throws -> Bool {
        let rows = try database.query(
            """
            SELECT digital_card_id, funding_pan FROM tokens
            WHERE wallet_account_id = ? AND device_id = ? AND pan_last4 = ? AND state IN ('ACTIVE', 'SUSPENDED')
                AND wallet_node_id IS ?
            """, [walletAccountID, deviceID, pan.last4, walletNodeID])
        for row in rows where try vault.openPAN(try row.get(1), recordID: try row.text(0)) == pan {
            return true
        }
        return false
    }

    static let tokenColumns = """
        digital_card_id, scheme, token_last4, token_expiry, pan_last4, issuer_id, wallet_account_id, device_id,
        state, decided_by, issuer_account_id, wallet_node_id, state_version, par
        """

    /// How many columns `tokenColumns` names: a query that selects more after them reads those from this index on.
    static let tokenColumnCount = 14

    static func token(from row: Row) throws -> TokenRecord {
        TokenRecord(
            digitalCardID: try row.text(0), scheme: CardScheme(rawValue: try row.text(1)) ?? .other,
            tokenLast4: try row.text(2), tokenExpiry: try row.text(3), panLast4: try row.text(4),
            issuerID: try row.text(5), walletAccountID: try row.text(6), deviceID: try row.text(7),
            state: TokenLifecycleStateMachine.State(rawValue: try row.text(8)) ?? .deactivated,
            decidedBy: try row.get(9), walletNodeID: try row.get(11), issuerAccountID: try row.get(10),
            stateVersion: UInt64(max(0, try row.int64(12))), paymentAccountReference: try row.get(13))
    }

    func tokens(walletAccountID: String?) throws -> [TokenRecord] {
        let rows: [Row]
        if let walletAccountID {
            rows = try database.query(
                "SELECT \(Self.tokenColumns) FROM tokens WHERE wallet_account_id = ? ORDER BY created_at_ms, rowid",
                [walletAccountID])
        } else {
            rows = try database.query("SELECT \(Self.tokenColumns) FROM tokens ORDER BY created_at_ms, rowid")
        }
        return try rows.map(Self.token(from:))
    }

    /// Up to `limit` tokens in the order they were made (ties in the order of their ids), after the creation time
    /// and id `after` (from the first when nil), each with its own page key: a listing page (`PageRequest`).
    ///
    /// A page key names the listing's filters too (`TokenListingFilter.listingName`, empty for every token), so that
    /// a token of one account's listing asked with another account is refused instead of silently skipping the
    /// other account's tokens made before it.
    func tokens(
        _ filter: TokenListingFilter, after: (ms: Int64, id: String)?, limit: Int
    ) throws(TSPError) -> [(token: TokenRecord, pageKey: String)] {
        let listing = filter.listingName
        let start = after ?? (Int64.min, "")
        let parameters: [any SQLValueConvertible] =
            filter.conditions.values.map { $0 as any SQLValueConvertible } + [start.ms, start.id, Int64(limit)]
        do {
            let rows = try database.query(Self.tokenPageQuery(filter), parameters)
            return try rows.map { row in
                let token = try Self.token(from: row)
                let ms = try row.get(Self.tokenColumnCount, as: Int64.self)
                return (token, PageRequest.key(in: listing, ms: ms, tieBreaker: token.digitalCardID))
            }
        } catch {
            // A damaged page is DATA_LOSS with what to restore, as for the other calls (`TSPError.internal`).
            throw TSPError.internal("listing tokens", error)
        }
    }

    /// The query of a `ListTokens` page: parameters are the filter's values (`TokenListingFilter.conditions`), the
    /// creation time and id the page starts after, and the number of rows. It walks `tokens_wallet_created` for one
    /// wallet account and `tokens_created` otherwise, skipping the tokens the other filters leave out: a page of a
    /// rare issuer or state reads past the tokens made between its matches, never sorts them.
    static func tokenPageQuery(_ filter: TokenListingFilter) -> String {
        let narrowing = filter.conditions.sql.map { "\($0) AND " }.joined()
        return """
            SELECT \(tokenColumns), created_at_ms FROM tokens
            WHERE \(narrowing)(created_at_ms, digital_card_id) > (?, ?)
            ORDER BY created_at_ms, digital_card_id LIMIT ?
            """
    }

    /// Up to `limit` tokens digitized through the wallet node `walletNodeID`, in the order they were stored, after
    /// the row `afterRow` (0 for the first page), each with its row id as its page key (`GetTokenStates`). A token
    /// stored before the TSP kept its wallet node belongs to no node, and is in no node's listing.
    func tokens(
        walletNodeID: String, afterRow: Int64, limit: Int
    ) throws(TSPError) -> [(token: TokenRecord, row: Int64)] {
        do {
            let rows = try database.query(
                """
                SELECT \(Self.tokenColumns), rowid FROM tokens WHERE wallet_node_id = ? AND rowid > ?
                ORDER BY rowid LIMIT ?
                """, [walletNodeID, afterRow, Int64(limit)])
            return try rows.map { row in
                (try Self.token(from: row), try row.get(Self.tokenColumnCount, as: Int64.self))
            }
        } catch {
            throw TSPError.internal("listing the wallet's tokens", error)
        }
    }

    func token(_ digitalCardID: String) throws -> TokenRecord? {
        try database.queryOne("SELECT \(Self.tokenColumns) FROM tokens WHERE digital_card_id = ?", [digitalCardID])
            .map(Self.token(from:))
    }

    /// Every state change of a token, in the order recorded (`TokenHistory` reads them in pages: `eventPage`).
    func events(of digitalCardID: String) throws -> [TspV1.TokenEvent] {
        try eventPage(of: digitalCardID, afterRow: 0, limit: Int.max).map(\.event)
    }

    /// Up to `limit` state changes of a token after the event whose row is `afterRow` (0 for the first), in the
    /// order recorded, each with its row: read through `token_events_token`, so a page of a long history costs the
    /// same as the first.
    func eventPage(
        of digitalCardID: String, afterRow: Int64, limit: Int
    ) throws -> [(event: TspV1.TokenEvent, row: Int64)] {
        try database.query(Self.eventPageQuery, [digitalCardID, afterRow, Int64(limit)]).map { row in
            let from = try row.get(1, as: String?.self).flatMap(TokenLifecycleStateMachine.State.init(rawValue:))
            let to = TokenLifecycleStateMachine.State(rawValue: try row.text(2))
            let event = TspV1.TokenEvent(
                atMs: UInt64(try row.int64(0)), fromState: from?.wire ?? .unspecified,
                toState: to?.wire ?? .unspecified,
                actor: try row.text(3), reason: try row.text(4), traceID: try row.text(5))
            return (event, try row.int64(6))
        }
    }

    static let eventPageQuery = """
        SELECT at_ms, from_state, to_state, actor, reason, trace_id, id FROM token_events
        WHERE digital_card_id = ? AND id > ? ORDER BY id LIMIT ?
        """

    /// Moves the token to `to` and records the move in its history, in the caller's transaction: every state change
    /// the lifecycle machine allowed goes through here.
    func setState(
        _ tx: Transaction, token: String, from: TokenLifecycleStateMachine.State, to: TokenLifecycleStateMachine.State,
        actor: String, reason: String, traceID: String, nowMs: UInt64
    ) throws {
        _ = try tx.execute(
            "UPDATE tokens SET state = ?, state_version = state_version + 1, updated_at_ms = ? WHERE digital_card_id = ?",
            [to.rawValue, Int64(nowMs), token])
        try recordEvent(
            tx, token: token, from: from, to: to, actor: actor, reason: reason, traceID: traceID, nowMs: nowMs)
    }

    /// Appends a row to the token's history. Its reason may hold a party's own words (an issuer's decline or
    /// activation reason): a card number in it is masked before it is stored.
    func recordEvent(
        _ tx: Transaction, token: String, from: TokenLifecycleStateMachine.State?, to: TokenLifecycleStateMachine.State,
        actor: String, reason: String, traceID: String, nowMs: UInt64
    ) throws {
        _ = try tx.execute(
            """
            INSERT INTO token_events (digital_card_id, at_ms, from_state, to_state, actor, reason, trace_id)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [token, Int64(nowMs), from?.rawValue, to.rawValue, actor, maskPAN(reason), traceID])
    }
}
