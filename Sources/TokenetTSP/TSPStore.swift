import Foundation
import TokenetCard
import TokenetStorage

/// A registered issuer as the TSP keeps it.
struct IssuerRecord: Sendable, Equatable {
    var id: String
    var name: String
    var binRanges: [IssuerBINRange]
    var encryptionKeyPEM: String
    /// The node id in the certificate of the node that registered it.
    var peerNodeID: String?
    /// The instance of that node (its data directory's `node-instance`), '' when it named none.
    var instanceID = ""

    func owns(_ pan: PAN) -> Bool { binRanges.contains { $0.contains(pan) } }
}

/// The TSP's SQLite storage. Every method is one transaction; card data and PANs are sealed with the DataVault,
/// bound to the row they belong to so a sealed blob cannot be moved to another row.
final class TSPStore: Sendable {
    let database: Database
    let vault: DataVault
    /// What opening the database did to its schema (nil: it was up to date), for the node's log.
    let schemaChange: SchemaChange?
    /// How many tokens made before PARs were kept were given theirs at this opening, for the node's log.
    let paymentAccountReferencesGiven: Int

    init(database: Database, vault: DataVault) throws {
        self.database = database
        self.vault = vault
        schemaChange = SchemaChange(applied: try Migrator(Self.migrations).migrate(database), among: Self.migrations)
        paymentAccountReferencesGiven = try Self.assignMissingPaymentAccountReferences(in: database, vault: vault)
    }

    /// Refuses the database at `path` when it is not a TSP's (`Migrator.checkOwnership`), changing nothing; a path
    /// with no file, or an empty one, passes (a first start).
    static func checkOwnership(path: String) throws {
        try Migrator(Self.migrations).checkOwnership(ofFileAt: path)
    }

    /// Opens the database at `path` with the vault `key`, refusing a key that cannot open the sealed data the
    /// database already holds (`CardError.vaultKeyMismatch`).
    static func open(path: String, key: VaultKeyFile) throws -> TSPStore {
        let store = try TSPStore(database: try Database.open(path: path), vault: key.vault)
        try store.verifyVaultKey(key, databasePath: path)
        return store
    }

    /// Where the TSP keeps sealed records, and the associated data each was sealed with: for a database made before
    /// check values, one of them shows which key it needs.
    private static let sealedSamples: [(sql: String, recordIDPrefix: String)] = [
        ("SELECT digital_card_id, funding_pan FROM tokens LIMIT 1", ""),
        ("SELECT receipt, card_data FROM eligibility_receipts LIMIT 1", "receipt:"),
        ("SELECT id, secret_sealed FROM auth_credentials LIMIT 1", "hotp-credential:"),
        ("SELECT id, card_data FROM push_sessions LIMIT 1", "push-session:"),
        ("SELECT payload, card_data FROM push_receipts LIMIT 1", "push-receipt:"),
    ]

    /// Checks `key` against the database's check value (or a sealed record, for a database without one) and stores
    /// the check value when there was none, in one transaction.
    func verifyVaultKey(_ key: VaultKeyFile, databasePath: String) throws {
        try database.transaction { tx in
            let stored = try tx.storedVaultKeyCheck()
            let sample = { () throws -> VaultKeyFile.SealedSample? in
                for (sql, prefix) in Self.sealedSamples {
                    if let row = try tx.queryOne(sql) {
                        return .init(
                            record: try row.blob(1), associatedData: Array((prefix + (try row.text(0))).utf8))
                    }
                }
                return nil
            }
            if let check = try key.verify(storedCheck: stored, sample: try sample(), database: databasePath) {
                _ = try tx.execute("INSERT INTO vault_key_check (singleton, sealed) VALUES (1, ?)", [check])
            }
        }
    }

    func seal(_ card: CardData, rowID: String) throws -> [UInt8] {
        try vault.seal(try card.jsonBytes(), associatedData: Array(rowID.utf8))
    }

    func openCard(_ blob: [UInt8], rowID: String) throws -> CardData {
        try CardData(json: try vault.open(blob, associatedData: Array(rowID.utf8)))
    }

    // MARK: Issuers

    /// Stores a registration. `check` judges it against the issuers registered, read in the same transaction: two
    /// registrations at once each checked the list as it was before either, and both were stored (two issuers
    /// owning one BIN range, or an issuer id taken from the node that registered it first).
    func upsertIssuer(
        _ issuer: IssuerRecord, nowMs: UInt64, check: ([IssuerRecord]) throws(TSPError) -> Void = { _ in }
    ) throws {
        try database.transaction { tx in
            try check(try Self.issuers(tx))
            _ = try tx.execute(
                """
                INSERT INTO issuers (id, name, encryption_key_pem, peer_node_id, updated_at_ms, instance_id)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET name = excluded.name, encryption_key_pem = excluded.encryption_key_pem,
                    peer_node_id = excluded.peer_node_id, updated_at_ms = excluded.updated_at_ms,
                    instance_id = excluded.instance_id
                """,
                [issuer.id, issuer.name, issuer.encryptionKeyPEM, issuer.peerNodeID, Int64(nowMs), issuer.instanceID])
            _ = try tx.execute("DELETE FROM issuer_bin_ranges WHERE issuer_id = ?", [issuer.id])
            for range in issuer.binRanges {
                _ = try tx.execute(
                    "INSERT INTO issuer_bin_ranges (issuer_id, low, high) VALUES (?, ?, ?)",
                    [issuer.id, range.low, range.high])
            }
        }
    }

    func issuers() throws -> [IssuerRecord] {
        try Self.issuers { try database.query($0) }
    }

    /// The issuers registered, as `tx` sees them.
    static func issuers(_ tx: Transaction) throws -> [IssuerRecord] {
        try issuers { try tx.query($0) }
    }

    private static func issuers(query: (String) throws -> [Row]) throws -> [IssuerRecord] {
        let rows = try query("SELECT id, name, encryption_key_pem, peer_node_id, instance_id FROM issuers ORDER BY id")
        let ranges = try query("SELECT issuer_id, low, high FROM issuer_bin_ranges ORDER BY rowid")
        var byIssuer: [String: [IssuerBINRange]] = [:]
        for row in ranges {
            byIssuer[try row.text(0), default: []].append(try IssuerBINRange(low: row.text(1), high: row.text(2)))
        }
        return try rows.map { row in
            let id = try row.text(0)
            return IssuerRecord(
                id: id, name: try row.text(1), binRanges: byIssuer[id] ?? [], encryptionKeyPEM: try row.text(2),
                peerNodeID: try row.get(3, as: String?.self), instanceID: try row.text(4))
        }
    }

    func issuer(owning pan: PAN) throws -> IssuerRecord? {
        try issuers().first { $0.owns(pan) }
    }

    // MARK: Push receipts and sessions

    /// Stores a push receipt; `walletAccountID` nil means any wallet account may redeem it, `walletNodeID` nil any
    /// wallet node.
    func insertPushReceipt(
        payload: String, issuerID: String, walletAccountID: String?, walletNodeID: String? = nil, card: CardData,
        nowMs: UInt64, expiresAtMs: UInt64
    ) throws {
        let sealed = try seal(card, rowID: "push-receipt:\(payload)")
        _ = try database.execute(
            """
            INSERT INTO push_receipts (payload, issuer_id, scheme, card_data, created_at_ms, expires_at_ms,
                wallet_account_id, wallet_node_id)
            VALUES (?, ?, 'mastercard', ?, ?, ?, ?, ?)
            """, [payload, issuerID, sealed, Int64(nowMs), Int64(expiresAtMs), walletAccountID, walletNodeID])
    }

    /// Marks a push receipt used and returns its card, or says why it cannot be used. A receipt the issuer pushed
    /// to one wallet account is refused to any other and stays unused; the refusal does not name the receipt's
    /// account, which would let whoever holds a copy of the payload claim that account.
    /// The card behind an issuer's push receipt, once it is checked that `walletAccountID` may use it now; the
    /// receipt stays unused until `consume(_:nowMs:in:)` spends it with an eligible answer.
    func pushReceiptCard(payload: String, walletAccountID: String, walletNodeID: String?, nowMs: UInt64) throws
        -> CardData
    {
        try database.transaction { tx in
            guard
                let row = try tx.queryOne(
                    """
                    SELECT card_data, expires_at_ms, used_at_ms, wallet_account_id, wallet_node_id FROM push_receipts
                    WHERE payload = ?
                    """, [payload])
            else {
                throw TSPError(
                    .notFound, "the push receipt is unknown to this token service; ask the issuer app for a new one")
            }
            // A used receipt is used, whoever asks: "stays unused" below would be wrong for it.
            if try row.get(2, as: Int64?.self) != nil { throw Self.pushReceiptUsed }
            // The node first: another node's wallet told to make the right account active only met this refusal next.
            if let node = try row.get(4, as: String?.self), node != walletNodeID {
                throw TSPError(
                    .permissionDenied,
                    "the push receipt was issued for another wallet node, and stays unused: add the card from the "
                        + "wallet the issuer pushed it to")
            }
            if let owner = try row.get(3, as: String?.self), owner != walletAccountID {
                throw TSPError(
                    .permissionDenied,
                    "the push receipt was issued for another wallet account, not \"\(walletAccountID)\", and stays "
                        + "unused: add the card from the wallet account the issuer pushed it to, or ask the issuer to "
                        + "push the card to \"\(walletAccountID)\"")
            }
            guard UInt64(try row.int64(1)) > nowMs else {
                throw TSPError(.failedPrecondition, "the push receipt has expired; ask the issuer app for a new one")
            }
            return try openCard(try row.get(0), rowID: "push-receipt:\(payload)")
        }
    }

    /// Said whether the card was then added or declined at digitization: a receipt is spent by the eligibility
    /// check that finds its card eligible ("adds a card once" was wrong for one whose card was then declined).
    static let pushReceiptUsed = TSPError(
        .failedPrecondition,
        "the push receipt was already used by an eligibility check that found its card eligible; a receipt is used "
            + "once: ask the issuer app to push the card again")

    /// Spends a push receipt or push session in `tx`, with the eligibility answer that came of it: it can then add
    /// no card again, and its row keeps the card without the security code. An instrument spent since it was
    /// checked (by a concurrent request) is refused, and `tx` with it.
    func consume(_ instrument: RedeemedInstrument, card: CardData, nowMs: UInt64, in tx: Transaction) throws {
        switch instrument {
        case .cardData:
            return
        case .pushReceipt(let payload):
            let spent = try tx.execute(
                "UPDATE push_receipts SET used_at_ms = ? WHERE payload = ? AND used_at_ms IS NULL",
                [Int64(nowMs), payload])
            guard spent.changes == 1 else { throw Self.pushReceiptUsed }
            try forgetSecurityCode(
                card, table: "push_receipts", keyColumn: "payload", key: payload, rowID: "push-receipt:\(payload)",
                in: tx)
        case .pushSession(let id):
            let spent = try tx.execute(
                "UPDATE push_sessions SET used_at_ms = ? WHERE id = ? AND used_at_ms IS NULL", [Int64(nowMs), id])
            guard spent.changes == 1 else { throw Self.pushSessionUsed(id) }
            try forgetSecurityCode(
                card, table: "push_sessions", keyColumn: "id", key: id, rowID: "push-session:\(id)", in: tx)
        }
    }

    /// Stores a push session for `walletAccountID` of the wallet node `walletNodeID` that created it.
    func insertPushSession(
        id: String, walletAccountID: String, walletNodeID: String? = nil, card: CardData, nowMs: UInt64,
        expiresAtMs: UInt64
    ) throws {
        let sealed = try seal(card, rowID: "push-session:\(id)")
        _ = try database.execute(
            """
            INSERT INTO push_sessions (id, wallet_account_id, wallet_node_id, card_data, created_at_ms, expires_at_ms)
            VALUES (?, ?, ?, ?, ?, ?)
            """, [id, walletAccountID, walletNodeID, sealed, Int64(nowMs), Int64(expiresAtMs)])
    }

    /// The card behind a push session, once it is checked that `walletAccountID` of the wallet node `walletNodeID`
    /// may use it now (the node that created it: two wallet nodes' accounts may have the same name); the session
    /// stays unused until `consume(_:nowMs:in:)` spends it with an eligible answer.
    func pushSessionCard(id: String, walletAccountID: String, walletNodeID: String? = nil, nowMs: UInt64) throws
        -> CardData
    {
        try database.transaction { tx in
            guard
                let row = try tx.queryOne(
                    """
                    SELECT card_data, expires_at_ms, used_at_ms, wallet_account_id, wallet_node_id FROM push_sessions
                    WHERE id = ?
                    """, [id])
            else {
                throw TSPError(
                    .notFound,
                    "push session \"\(id)\" is unknown; the wallet backend creates one with CreatePushSession when "
                        + "an issuer pushes a card to it (tokenet issuer push-card ISSUER_ADDR CARD --mode session)")
            }
            // A used session is used, whoever asks: "stays unused" below would be wrong for it.
            if try row.get(2, as: Int64?.self) != nil { throw Self.pushSessionUsed(id) }
            // The node first: another node's wallet told to make the right account active only met this refusal next.
            if let creator = try row.get(4, as: String?.self), creator != walletNodeID {
                throw TSPError(
                    .permissionDenied,
                    "push session \"\(id)\" was made for another wallet node, and stays unused: add the card from "
                        + "the wallet the issuer pushed it to")
            }
            guard try row.text(3) == walletAccountID else {
                throw TSPError(
                    .permissionDenied,
                    "push session \"\(id)\" is for another wallet account, not \"\(walletAccountID)\", and stays "
                        + "unused: add the card from the wallet account the issuer pushed it to, or ask the issuer to "
                        + "push the card to \"\(walletAccountID)\"")
            }
            guard UInt64(try row.int64(1)) > nowMs else {
                throw TSPError(.failedPrecondition, "push session \"\(id)\" has expired; create a new push session")
            }
            return try openCard(try row.get(0), rowID: "push-session:\(id)")
        }
    }

    static func pushSessionUsed(_ id: String) -> TSPError {
        TSPError(.failedPrecondition, "push session \"\(id)\" was already used; create a new push session")
    }
}

/// Where the card of an eligibility check came from: typed card data, or an issuer's push receipt or push session,
/// which the answer spends.
enum RedeemedInstrument: Equatable {
    case cardData
    case pushReceipt(String)
    case pushSession(String)
}
