import Foundation
import TokenetCard
import TokenetStorage

extension IssuerStore {
    /// Loads a validated fixture in one transaction. Loading the same fixture again changes nothing visible:
    /// rows are upserted by id, so a restart with `--fixtures` is safe and an edited fixture updates its entries —
    /// except the number and expiry of a card renewed since (`renewed`), which stay as the renewal left them.
    func importFixture(_ fixture: IssuerFixture) throws(IssuerError) {
        let ranges = String(decoding: try Self.json(fixture.issuer.binRanges), as: UTF8.self)
        var rules: [String: String] = [:]
        var sealed: [String: (panRecord: [UInt8], cvcRecord: [UInt8], pan: PAN)] = [:]
        for card in fixture.cards {
            rules[card.id] = String(decoding: try Self.json(card.digitization), as: UTF8.self)
            do {
                let pan = try PAN(card.pan)
                sealed[card.id] = (
                    try vault.seal(pan, recordID: "card:\(card.id)"),
                    try vault.seal(Array(card.cvc.utf8), associatedData: Array("cvc:\(card.id)".utf8)), pan
                )
            } catch {
                throw IssuerError(.keys, "cannot seal the card \(card.id)", cause: error)
            }
        }
        try storage("load the fixture into the database") {
            try database.transaction { tx in
                // One issuer per data directory: another bank's fixture on it mixed the two banks' cards and
                // cardholders, and the node pushed and enrolled cards outside its BIN ranges.
                if let stored = try tx.queryOne("SELECT issuer_id FROM issuer_profile WHERE singleton = 1"),
                    let storedID = try? stored.text(0), storedID != fixture.issuer.id
                {
                    throw IssuerError(
                        .fixture,
                        "the data directory holds the cards of issuer \(storedID), and the fixture is issuer "
                            + "\(fixture.issuer.id)'s: a data directory keeps one issuer's cards; give this fixture a "
                            + "data directory of its own, or load issuer \(storedID)'s fixture")
                }
                try tx.execute(
                    """
                    INSERT INTO issuer_profile (singleton, issuer_id, name, bin_ranges, call_center)
                    VALUES (1, ?, ?, ?, ?)
                    ON CONFLICT(singleton) DO UPDATE SET issuer_id = excluded.issuer_id, name = excluded.name,
                        bin_ranges = excluded.bin_ranges, call_center = excluded.call_center
                    """,
                    [fixture.issuer.id, fixture.issuer.name, ranges, fixture.issuer.callCenterNumber])
                for holder in fixture.cardholders {
                    try tx.execute(
                        """
                        INSERT INTO cardholders (id, name, phone, email) VALUES (?, ?, ?, ?)
                        ON CONFLICT(id) DO UPDATE SET name = excluded.name, phone = excluded.phone,
                            email = excluded.email
                        """, [holder.id, holder.name, holder.phone, holder.email])
                }
                for account in fixture.accounts {
                    try tx.execute(
                        """
                        INSERT INTO accounts (id, cardholder_id) VALUES (?, ?)
                        ON CONFLICT(id) DO UPDATE SET cardholder_id = excluded.cardholder_id
                        """, [account.id, account.cardholderId])
                }
                for card in fixture.cards {
                    guard let seal = sealed[card.id], let rule = rules[card.id] else { continue }
                    if let holder = try renewalReserving(seal.pan, forFixtureCard: card.id, in: tx) {
                        throw IssuerError(
                            .fixture,
                            "fixture card \(card.id) has the card number ending \(seal.pan.last4), which card "
                                + "\(holder) has reserved for its pending renewal; settle that renewal first "
                                + "(repeat it with tokenet issuer renew-card) or give card \(card.id) another number")
                    }
                    if let holder = try cardHolding(seal.pan, otherThan: card.id, in: tx) {
                        throw IssuerError(
                            .fixture,
                            "fixture card \(card.id) has the card number ending \(seal.pan.last4), which card \(holder) "
                                + "holds in this data directory (loaded before): a card keeps its id and its number "
                                + "from one load to the next, so give \(card.id) back its old id if it was renamed, or "
                                + "its own number if two cards swapped theirs, or start on a new data directory")
                    }
                    try tx.execute(
                        """
                        INSERT INTO cards (id, account_id, pan_sealed, last4, scheme, expiry, cvc_sealed,
                            cardholder_name, not_eligible_reason, rule)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(id) DO UPDATE SET account_id = excluded.account_id,
                            pan_sealed = CASE WHEN renewed THEN pan_sealed ELSE excluded.pan_sealed END,
                            last4 = CASE WHEN renewed THEN last4 ELSE excluded.last4 END,
                            scheme = CASE WHEN renewed THEN scheme ELSE excluded.scheme END,
                            expiry = CASE WHEN renewed THEN expiry ELSE excluded.expiry END,
                            cvc_sealed = excluded.cvc_sealed,
                            cardholder_name = excluded.cardholder_name,
                            not_eligible_reason = excluded.not_eligible_reason, rule = excluded.rule
                        """,
                        [
                            card.id, card.accountId, seal.panRecord, seal.pan.last4, seal.pan.scheme.rawValue,
                            card.expiry, seal.cvcRecord, card.cardholderName, card.notEligibleReason, rule,
                        ])
                }
            }
        }
    }

    /// The card other than `cardID` whose pending renewal has reserved `pan`, when the fixture's number for `cardID`
    /// would be stored: loading it would give two cards one number once that renewal completes, and the issuer decides
    /// on a card by its number. A card renewed since keeps its renewed number, so its fixture number is not checked.
    /// The stored card other than `cardID` that has `pan`. A card renamed in the fixture was added as a second card
    /// with the same number, and the first one, with its old rule, went on deciding its digitizations.
    private func cardHolding(_ pan: PAN, otherThan cardID: String, in tx: Transaction) throws -> String? {
        let rows = try tx.query("SELECT id, pan_sealed FROM cards WHERE last4 = ? AND id != ?", [pan.last4, cardID])
        for row in rows {
            let other = try row.text(0)
            if try vault.openPAN(try row.blob(1), recordID: "card:\(other)") == pan { return other }
        }
        return nil
    }

    private func renewalReserving(_ pan: PAN, forFixtureCard cardID: String, in tx: Transaction) throws -> String? {
        if let row = try tx.queryOne("SELECT renewed FROM cards WHERE id = ?", [cardID]), try row.int64(0) != 0 {
            return nil
        }
        let rows = try tx.query(
            "SELECT id, pending_pan_sealed FROM cards WHERE pending_last4 = ? AND id != ?", [pan.last4, cardID])
        for row in rows {
            let other = try row.text(0)
            if try vault.openPAN(try row.blob(1), recordID: "card:\(other)") == pan { return other }
        }
        return nil
    }

    /// The issuer's identity, once a fixture has been loaded.
    func profile() throws(IssuerError) -> IssuerProfile? {
        try storage("read the issuer profile") {
            guard let row = try database.queryOne("SELECT * FROM issuer_profile WHERE singleton = 1") else {
                return nil
            }
            let ranges = try JSONDecoder().decode(
                [IssuerFixture.BINRange].self, from: Data(try row.text("bin_ranges").utf8))
            return IssuerProfile(
                id: try row.text("issuer_id"), name: try row.text("name"), binRanges: ranges,
                callCenterNumber: try row.get("call_center", as: String?.self))
        }
    }

    static func json(_ value: some Encodable) throws(IssuerError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw IssuerError(.storage, "cannot encode a value as JSON", cause: IssuerDescribedError(error))
        }
    }
}
