import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

/// A token's state change as stored: the token before and after, and the suspensions it holds after.
struct TokenStateChange: Sendable, Equatable {
    var before: TokenRecord
    var after: TokenRecord
    /// Each party's suspension the token holds after the change (`SuspensionAuthority`); empty unless SUSPENDED.
    var suspensions: [SuspensionAuthority.Held] = []
}

extension TSPStore {
    /// Applies `event` to the token in one transaction: the state machine decides, the new state and its audit event
    /// are stored together. `authorize` sees the token first and throws when the caller may not act on it.
    /// A refused transition throws FAILED_PRECONDITION with the state machine's message and changes nothing.
    /// What `announce` makes of the change is journaled with it.
    func changeTokenState(
        _ digitalCardID: String, event: TokenLifecycleStateMachine.Event, actor: String, reason: String,
        traceID: String, nowMs: UInt64, announce: (TokenStateChange) throws -> [Announcement] = { _ in [] },
        authorize: (TokenRecord) throws -> Void
    ) throws -> Journaled<TokenStateChange> {
        try changeTokenState(
            digitalCardID, event: event, actorOf: { _ in actor }, reason: reason, traceID: traceID, nowMs: nowMs,
            announce: announce, authorize: authorize)
    }

    /// `changeTokenState` with the actor recorded for the token as `actorOf` names it: an issuer is recorded as the
    /// token's issuer (`issuer:ISSUER_ID`), which one node that registered several issuers knows only from the token.
    func changeTokenState(
        _ digitalCardID: String, event: TokenLifecycleStateMachine.Event, actorOf: (TokenRecord) -> String,
        reason: String, traceID: String, nowMs: UInt64,
        announce: (TokenStateChange) throws -> [Announcement] = { _ in [] }, authorize: (TokenRecord) throws -> Void
    ) throws -> Journaled<TokenStateChange> {
        try journaling(
            { tx in
                guard
                    let before = try tx.queryOne(
                        "SELECT \(Self.tokenColumns) FROM tokens WHERE digital_card_id = ?", [digitalCardID]
                    ).map(Self.token(from:))
                else { throw TSPError.unknownToken(digitalCardID) }
                try authorize(before)
                let actor = actorOf(before)
                if before.state == .suspended, event == .resume || event == .suspend {
                    let party = SuspensionAuthority(actor: actor)
                    let decision = SuspensionAuthority.decide(
                        resuming: event == .resume, by: party, held: try suspensions(tx, of: digitalCardID),
                        token: digitalCardID)
                    switch decision {
                    case .proceed: break
                    case .refuse(let message): throw TSPError(.failedPrecondition, message)
                    case .add, .lift:
                        // A new state version, so that the wallet and the issuer app hear who holds the token's
                        // suspensions now (`TSPService.cardState`): told nothing, their inboxes kept the old ones,
                        // and a cardholder was offered a resume the TSP refuses.
                        var recorded = reason
                        if case .lift(let remaining) = decision {
                            let stands = remaining.count == 1 ? "stands" : "stand"
                            recorded =
                                "\(reason); lifts \(party.name)'s suspension, "
                                + "\(SuspensionAuthority.listed(remaining.map { "\($0.party.name)'s" })) \(stands)"
                        }
                        try setState(
                            tx, token: digitalCardID, from: .suspended, to: .suspended, actor: actor,
                            reason: recorded, traceID: traceID, nowMs: nowMs)
                        if case .add = decision {
                            try placeSuspension(
                                tx, of: digitalCardID, actor: actor, reason: reason, nowMs: nowMs,
                                eventID: tx.lastInsertRowID)
                        } else {
                            try liftSuspensions(tx, of: digitalCardID, party: party)
                        }
                        var after = before
                        after.stateVersion += 1
                        return TokenStateChange(
                            before: before, after: after, suspensions: try suspensions(tx, of: digitalCardID))
                    }
                }
                var machine = TokenLifecycleStateMachine(state: before.state)
                switch machine.handle(event) {
                case .rejected(let rejection):
                    throw TSPError(.failedPrecondition, rejection.message)
                case .unchanged:
                    return TokenStateChange(before: before, after: before)
                case .transitioned(let from, let to):
                    // Resuming makes the token live again; not beside another live token of its card on the device.
                    if event == .resume { try requireNoLiveSibling(tx, of: digitalCardID) }
                    var after = before
                    after.state = to
                    after.stateVersion += 1
                    try setState(
                        tx, token: digitalCardID, from: from, to: to, actor: actor, reason: reason, traceID: traceID,
                        nowMs: nowMs)
                    switch to {
                    case .suspended:
                        try placeSuspension(
                            tx, of: digitalCardID, actor: actor, reason: reason, nowMs: nowMs,
                            eventID: tx.lastInsertRowID)
                    case .active:
                        try liftSuspensions(tx, of: digitalCardID)
                    default:
                        // A token deleted while SUSPENDED keeps its suspensions, which `HeldSuspension` reads.
                        break
                    }
                    return TokenStateChange(
                        before: before, after: after, suspensions: try suspensions(tx, of: digitalCardID))
                }
            }, announce: announce)
    }

    /// How a renewal's event in a token's history begins.
    static let renewalReason = "card renewed; "

    /// The node ids of the issuer that owns the token's issuer id (nil when unknown or registered without TLS).
    func issuerNodeID(of issuerID: String) throws -> String? {
        try database.queryOne("SELECT peer_node_id FROM issuers WHERE id = ?", [issuerID])?.get(0, as: String?.self)
    }

    /// The issuer ids registered by the node `nodeID`.
    func issuerIDs(registeredBy nodeID: String?) throws -> Set<String> {
        guard let nodeID else { return [] }
        return Set(
            try database.query("SELECT id FROM issuers WHERE peer_node_id = ?", [nodeID]).map { try $0.text(0) })
    }

    // MARK: Transactions

    /// Stores a transaction and stamps the token's last call, journaling `announcements` with it.
    func insertTransaction(
        _ transaction: TspV1.TspTransaction, authnExpiresAtMs: UInt64?, announcing announcements: [Announcement] = []
    ) throws -> Journaled<Void> {
        try journaling(
            { tx in
                // Checked again where it is stored: a suspend or delete committed since the service looked would
                // otherwise leave an approved payment on a token that cannot pay.
                guard
                    let row = try tx.queryOne(
                        "SELECT state FROM tokens WHERE digital_card_id = ?", [transaction.digitalCardID])
                else { throw TSPError.unknownToken(transaction.digitalCardID) }
                let state = try row.text(0)
                guard state == TokenLifecycleStateMachine.State.active.rawValue else {
                    throw TSPError(
                        .failedPrecondition,
                        "token \"\(transaction.digitalCardID)\" is \(state); only an ACTIVE token can pay")
                }
                _ = try tx.execute(
                    """
                    INSERT INTO transactions (id, digital_card_id, amount_minor, currency, merchant, approved, at_ms,
                        authn_request_id, authn_status, authn_expires_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        transaction.transactionID, transaction.digitalCardID, transaction.amountMinor,
                        transaction.currency, transaction.merchant, transaction.approved ? 1 : 0,
                        Int64(transaction.atMs), transaction.authnRequestID.isEmpty ? nil : transaction.authnRequestID,
                        transaction.authnStatus.isEmpty ? nil : transaction.authnStatus,
                        authnExpiresAtMs.map { Int64($0) },
                    ])
                _ = try tx.execute(
                    "UPDATE tokens SET last_call_at_ms = ? WHERE digital_card_id = ?",
                    [Int64(transaction.atMs), transaction.digitalCardID])
            }, announce: { announcements })
    }

    static let transactionColumns = """
        id, digital_card_id, amount_minor, currency, merchant, approved, at_ms, authn_request_id, authn_status
        """

    static func transaction(from row: Row) throws -> TspV1.TspTransaction {
        TspV1.TspTransaction(
            transactionID: try row.text(0), digitalCardID: try row.text(1), amountMinor: try row.int64(2),
            currency: try row.text(3), merchant: try row.text(4), atMs: UInt64(try row.int64(6)),
            approved: try row.int64(5) != 0, authnRequestID: try row.get(7, as: String?.self) ?? "",
            authnStatus: try row.get(8, as: String?.self) ?? "")
    }

    /// Up to `limit` transactions in the order they were made (ties in the order they were stored), of one token
    /// or of every token, after the place `after` (`PageRequest.afterTime`), each with its page key. A request
    /// left unanswered past its expiry at `nowMs` is listed EXPIRED: nobody can answer it any more, as the issuer
    /// app lists it too.
    func transactions(
        of digitalCardID: String?, after: (ms: Int64, row: Int64), limit: Int, nowMs: UInt64
    ) throws -> [(transaction: TspV1.TspTransaction, pageKey: String)] {
        let parameters: [any SQLValueConvertible] =
            (digitalCardID.map { [$0] } ?? []) + [after.ms, after.row, Int64(limit)]
        return try database.query(Self.transactionPageQuery(oneToken: digitalCardID != nil), parameters).map { row in
            let key = PageRequest.key(
                in: digitalCardID ?? "", ms: try row.int64(6), row: try row.int64(Self.transactionColumnCount))
            var transaction = try Self.transaction(from: row)
            if transaction.authnStatus == Self.authnPending,
                let expires = try row.get(Self.transactionColumnCount + 1, as: Int64?.self), UInt64(expires) <= nowMs
            {
                transaction.authnStatus = Self.authnExpired
            }
            return (transaction, key)
        }
    }

    static let authnPending = "PENDING"
    /// Stored by `expireAuthns`; until it runs, a PENDING request past its expiry is listed so all the same
    /// (`transactions(of:after:limit:nowMs:)`).
    static let authnExpired = "EXPIRED"

    /// The payments whose authentication request was still PENDING at its expiry `?`, oldest expiry first, at most
    /// `?` of them: a read of the partial index `transactions_authn_pending` (TSP migration 16).
    static let dueAuthnsQuery = """
        SELECT \(transactionColumns) FROM transactions
        WHERE authn_status = 'PENDING' AND authn_expires_at_ms <= ?
        ORDER BY authn_expires_at_ms, rowid LIMIT ?
        """

    /// Declines at most `limit` payments whose authentication request nobody answered by its expiry: EXPIRED and
    /// not approved, in one transaction with what `announce` makes of them. Returns them as declined. An answer
    /// that commits first wins; one that comes after is refused as too late (`answerAuthn`).
    func expireAuthns(
        nowMs: UInt64, limit: Int, announce: ([TspV1.TspTransaction]) throws -> [Announcement]
    ) throws -> Journaled<[TspV1.TspTransaction]> {
        try journaling(
            { tx in
                let due = try tx.query(Self.dueAuthnsQuery, [Int64(clamping: nowMs), Int64(limit)])
                return try due.map { row in
                    var transaction = try Self.transaction(from: row)
                    _ = try tx.execute(
                        """
                        UPDATE transactions SET authn_status = ?, approved = 0
                        WHERE authn_request_id = ? AND authn_status = ?
                        """, [Self.authnExpired, transaction.authnRequestID, Self.authnPending])
                    transaction.authnStatus = Self.authnExpired
                    transaction.approved = false
                    return transaction
                }
            }, announce: announce)
    }

    /// The query of a `ListTransactions` page, of one token's transactions or every token's: parameters are the
    /// token (for one), the time and row id the page starts after, and the number of rows. Each reads through an
    /// index in its order (`transactions_token`, `transactions_made`), which ends in the row id.
    static func transactionPageQuery(oneToken: Bool) -> String {
        """
        SELECT \(transactionColumns), rowid, authn_expires_at_ms FROM transactions
        WHERE \(oneToken ? "digital_card_id = ? AND " : "")(at_ms, rowid) > (?, ?)
        ORDER BY at_ms, rowid LIMIT ?
        """
    }

    static let transactionColumnCount = 9

    /// Records the cardholder's answer once, in one transaction; a repeated answer that agrees is harmless, one that
    /// disagrees is refused. A proceed approves the payment only while its token is ACTIVE: one suspended or
    /// deleted while the request waited is declined, as a new payment with it would be. Returns the transaction as
    /// answered and its token's state; what `announce` makes of it is journaled with it.
    func answerAuthn(
        _ authnRequestID: String, proceed: Bool, nowMs: UInt64,
        announce: ((transaction: TspV1.TspTransaction, changed: Bool)) throws -> [Announcement] = { _ in [] },
        authorize: (TokenRecord) throws -> Void
    ) throws -> Journaled<
        (transaction: TspV1.TspTransaction, changed: Bool, tokenState: TokenLifecycleStateMachine.State)
    > {
        try journaling(
            { tx in
                guard
                    let row = try tx.queryOne(
                        """
                        SELECT \(Self.transactionColumns), authn_expires_at_ms FROM transactions
                        WHERE authn_request_id = ?
                        """, [authnRequestID])
                else { throw TSPError(.notFound, "no authentication request has id \"\(authnRequestID)\"") }
                var transaction = try Self.transaction(from: row)
                guard
                    let token = try tx.queryOne(
                        "SELECT \(Self.tokenColumns) FROM tokens WHERE digital_card_id = ?", [transaction.digitalCardID]
                    ).map(Self.token(from:))
                else { throw TSPError(.internal, "a transaction lost its token") }
                try authorize(token)
                let status = proceed ? "PROCEEDED" : "CANCELLED"
                let expiresAtMs = try row.get(9, as: Int64?.self)
                let pastExpiry = expiresAtMs.map { UInt64($0) <= nowMs } ?? false
                let expired =
                    transaction.authnStatus == Self.authnExpired
                    || (transaction.authnStatus == Self.authnPending && pastExpiry)
                if expired {
                    throw TSPError(
                        .failedPrecondition,
                        "authentication request \"\(authnRequestID)\" has expired (it is listed EXPIRED); it can no "
                            + "longer be answered")
                }
                if transaction.authnStatus != "PENDING" {
                    guard transaction.authnStatus == status else {
                        throw TSPError(
                            .failedPrecondition,
                            "authentication request \"\(authnRequestID)\" was already answered: \(transaction.authnStatus)"
                        )
                    }
                    return (transaction, false, token.state)
                }
                let approved = proceed && token.state == .active
                _ = try tx.execute(
                    """
                    UPDATE transactions SET authn_status = ?, approved = ?, authn_answered_at_ms = ?
                    WHERE authn_request_id = ?
                    """, [status, approved ? 1 : 0, Int64(nowMs), authnRequestID])
                transaction.authnStatus = status
                transaction.approved = approved
                return (transaction, true, token.state)
            }, announce: { try announce(($0.transaction, $0.changed)) })
    }

    // MARK: Payment keys

    /// Records a batch of payment keys, journaling `announcements` with it. The token must still be ACTIVE in this
    /// transaction (FAILED_PRECONDITION otherwise, NOT_FOUND for an unknown token): the caller read it before, and a
    /// suspend or delete that committed since must not be followed by keys for a token that no longer pays. A
    /// request id that has its batch already is answered with it, whatever the token's state now.
    func insertKeyBatch(
        id: String, digitalCardID: String, issued: UInt32, remainingBefore: UInt32, requestID: String = "",
        nowMs: UInt64, announcing announcements: [Announcement] = []
    ) throws -> Journaled<KeyBatch> {
        try journaling(
            { tx in
                guard
                    let row = try tx.queryOne("SELECT state FROM tokens WHERE digital_card_id = ?", [digitalCardID])
                else { throw TSPError.unknownToken(digitalCardID) }
                // Looked up in the transaction that would insert it: two requests with one id at once (a wallet that
                // asked again while its first call still ran here) get one batch. Before the state: a wallet whose
                // answer was lost, and whose token was suspended meanwhile, learns the batch it was issued.
                if !requestID.isEmpty,
                    let earlier = try tx.queryOne(
                        "SELECT id, keys_issued FROM key_batches WHERE digital_card_id = ? AND request_id = ?",
                        [digitalCardID, requestID])
                {
                    return KeyBatch(id: try earlier.text(0), issued: UInt32(try earlier.int64(1)), reissued: true)
                }
                let state = try row.text(0)
                guard state == TokenLifecycleStateMachine.State.active.rawValue else {
                    throw TSPError(
                        .failedPrecondition,
                        "token \"\(digitalCardID)\" is \(state); payment keys are issued to ACTIVE tokens only")
                }
                _ = try tx.execute(
                    """
                    INSERT INTO key_batches (id, digital_card_id, keys_issued, keys_remaining_before, at_ms, request_id)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                    [
                        id, digitalCardID, Int64(issued), Int64(remainingBefore), Int64(nowMs),
                        requestID.isEmpty ? nil : requestID,
                    ])
                // A token keeps its latest batches only: a wallet asking in a loop grew the table without end. A
                // retry names a recent request, whose batch is kept.
                _ = try tx.execute(
                    """
                    DELETE FROM key_batches WHERE digital_card_id = ? AND rowid <= (
                        SELECT rowid FROM key_batches WHERE digital_card_id = ? ORDER BY rowid DESC LIMIT 1 OFFSET ?)
                    """, [digitalCardID, digitalCardID, Int64(Self.keptKeyBatches)])
                return KeyBatch(id: id, issued: issued, reissued: false)
            }, announce: { batch in batch.reissued ? [] : announcements })
    }

    /// A batch of payment keys as `insertKeyBatch` answers it: `reissued` when the request's id named one issued
    /// before, which is answered again and announced no second time.
    struct KeyBatch: Equatable {
        let id: String
        let issued: UInt32
        let reissued: Bool
    }

    /// How many of a token's latest key batches are kept (`insertKeyBatch`).
    static let keptKeyBatches = 100

    func keyBatchCount(of digitalCardID: String) throws -> Int {
        Int(
            try database.queryOne("SELECT COUNT(*) FROM key_batches WHERE digital_card_id = ?", [digitalCardID])?
                .int64(0) ?? 0)
    }

    // MARK: Card renewal

    /// Replaces the funding card of the tokens (the token numbers stay), with an audit event each, in one
    /// transaction, and answers a result per token in the order given (`TspV1.TokenStateResult`). A token that cannot
    /// take the renewal is refused in its own result and the others are still renewed: one the TSP does not know
    /// (NOT_FOUND), another issuer's (`authorize` refuses it; PERMISSION_DENIED, its state not told), a deleted one
    /// (FAILED_PRECONDITION, DEACTIVATED), a live one whose renewed card is live as another token in its wallet
    /// account on its device (FAILED_PRECONDITION naming that token, `renewalConflict`). `check` judges the renewed
    /// card against each token the issuer may act on, and what it throws refuses the whole call. An `expiry` of nil
    /// (card data whose expiry cannot be read) leaves the recorded expiry unknown. What `announce` makes of the
    /// renewed tokens is journaled with them.
    func renewFundingCard(
        _ digitalCardIds: [String], pan: PAN, expiry: CardExpiry?, actor: String, traceID: String, nowMs: UInt64,
        announce: ([TokenRecord]) throws -> [Announcement] = { _ in [] },
        authorize: (TokenRecord) throws -> Void, check: (TokenRecord) throws -> Void
    ) throws -> Journaled<(renewed: [TokenRecord], results: [TspV1.TokenStateResult], held: Set<String>)> {
        try journaling(
            { tx in
                var renewed: [TokenRecord] = []
                // Renewed tokens that held the card already: answered as renewed, and announced no more.
                var held: Set<String> = []
                var results: [TspV1.TokenStateResult] = []
                for id in digitalCardIds {
                    guard
                        let row = try tx.queryOne(
                            "SELECT \(Self.tokenColumns), funding_pan, funding_expiry FROM tokens WHERE digital_card_id = ?",
                            [id])
                    else {
                        results.append(
                            Self.refusal(of: id, TSPError.unknownToken(id)))
                        continue
                    }
                    var token = try Self.token(from: row)
                    do { try authorize(token) } catch let error as TSPError where error.code == .permissionDenied {
                        results.append(Self.refusal(of: id, error))
                        continue
                    }
                    // A deleted token has nothing left to renew; the others still are.
                    guard token.state != .deactivated else {
                        let deleted = TSPError(
                            .failedPrecondition, "token \"\(id)\" is deleted: it has no card to renew")
                        results.append(Self.refusal(of: id, deleted, state: token.state.wire))
                        continue
                    }
                    try check(token)
                    // A token that holds this card already (a repeat of a renewal whose answer was lost after some of
                    // its calls were applied) is answered as renewed, with no second history row or CARD_RENEWAL:
                    // each party would otherwise hear of the one renewal twice.
                    let expiryHeld = try row.get(Self.tokenColumnCount + 1, as: String?.self)
                    if expiryHeld == expiry?.description,
                        try vault.openPAN(try row.blob(Self.tokenColumnCount), recordID: id) == pan
                    {
                        renewed.append(token)
                        held.insert(id)
                        results.append(.init(digitalCardID: id, tokenState: token.state.wire))
                        continue
                    }
                    // Renewing it to a card already live beside it would give that card two live tokens there.
                    if let conflict = try renewalConflict(tx, renewing: token, to: pan) {
                        results.append(Self.refusal(of: id, conflict, state: token.state.wire))
                        continue
                    }
                    _ = try tx.execute(
                        """
                        UPDATE tokens SET funding_pan = ?, pan_last4 = ?, funding_expiry = ?, updated_at_ms = ?
                        WHERE digital_card_id = ?
                        """, [try vault.seal(pan, recordID: id), pan.last4, expiry?.description, Int64(nowMs), id])
                    // The renewed number joins the account's PAR: a token made from it later gets the same one.
                    if let par = token.paymentAccountReference { try bindNumber(pan, to: par, in: tx) }
                    try recordEvent(
                        tx, token: id, from: token.state, to: token.state, actor: actor,
                        reason: Self.renewalReason + "funding card now ends in \(pan.last4)", traceID: traceID,
                        nowMs: nowMs)
                    token.panLast4 = pan.last4
                    renewed.append(token)
                    results.append(.init(digitalCardID: id, tokenState: token.state.wire))
                }
                return (renewed, results, held)
            },
            announce: { renewal in try announce(renewal.renewed.filter { !renewal.held.contains($0.digitalCardID) }) })
    }

    /// The result of a token refused alone with `error`, in `state` (UNSPECIFIED when not told).
    private static func refusal(
        of id: String, _ error: TSPError, state: CardV1.TokenState = .unspecified
    ) -> TspV1.TokenStateResult {
        .init(digitalCardID: id, tokenState: state, statusCode: error.rpcError.code.rawValue, message: error.message)
    }

    /// What the TSP holds for each of `digitalCardIds`, in their order: the token's state and the last four digits
    /// and expiry of its funding card, and whether its number is `pan` (compared opened, inside the TSP, so no number
    /// leaves it). A token is refused in its own answer, as `renewFundingCard` refuses it, and the others are still
    /// answered: one the TSP does not know (NOT_FOUND), another issuer's (`authorize` refuses it; PERMISSION_DENIED,
    /// nothing of it told), so that one foreign token does not keep the issuer from learning about its own.
    func fundingCards(
        _ digitalCardIds: [String], comparedWith pan: PAN?, authorize: (TokenRecord) throws -> Void
    ) throws -> [TspV1.FundingCard] {
        try database.transaction { tx in
            try digitalCardIds.map { id in
                guard
                    let row = try tx.queryOne(
                        "SELECT \(Self.tokenColumns), funding_pan, funding_expiry FROM tokens WHERE digital_card_id = ?",
                        [id])
                else {
                    return Self.unanswered(id, TSPError.unknownToken(id))
                }
                let token = try Self.token(from: row)
                do { try authorize(token) } catch let error as TSPError where error.code == .permissionDenied {
                    return Self.unanswered(id, error)
                }
                let sealedPAN = try row.blob(Self.tokenColumnCount)
                let matches = try pan.map { try vault.openPAN(sealedPAN, recordID: id) == $0 } ?? false
                return TspV1.FundingCard(
                    digitalCardID: id, tokenState: token.state.wire, panLast4: token.panLast4,
                    expiry: try row.get(Self.tokenColumnCount + 1, as: String?.self) ?? "", panMatches: matches)
            }
        }
    }

    /// The funding card of a token refused alone with `error`: no state, number or expiry.
    private static func unanswered(_ id: String, _ error: TSPError) -> TspV1.FundingCard {
        .init(digitalCardID: id, statusCode: error.rpcError.code.rawValue, message: error.message)
    }
}
