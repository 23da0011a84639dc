import Foundation
import TokenetCard
import TokenetStorage

extension IssuerStore {
    /// Marks the cards renewed at run time, whose number and expiry a fixture loaded at a later start must not
    /// reset: the TSP moved their tokens onto the renewed card, so going back to the fixture's values would leave
    /// the issuer refusing (as "expiry does not match") the card its own tokens stand for.
    static let renewalSchema = """
        ALTER TABLE cards ADD COLUMN renewed INTEGER NOT NULL DEFAULT 0;
        """

    /// Replaces a card's number and/or expiry (the card keeps its id), sealing the new number in the same row.
    /// A number another card carries is refused in the same transaction, so two renewals racing for one number
    /// cannot both win: the issuer decides on a card by its number, and two cards with one number would make that
    /// decision depend on row order.
    func renewCard(id: String, pan: PAN, expiry: CardExpiry) throws(IssuerError) {
        let sealed: [UInt8]
        do {
            sealed = try vault.seal(pan, recordID: "card:\(id)")
        } catch {
            throw IssuerError(.keys, "cannot seal the renewed card \(id)", cause: error)
        }
        try storage("renew card \(id)") {
            try database.transaction { tx in
                if let other = try otherCard(carrying: pan, besides: id, in: tx) {
                    throw IssuerError(.alreadyExists, Self.numberInUse(pan, by: other))
                }
                _ = try tx.execute(
                    "UPDATE cards SET pan_sealed = ?, last4 = ?, scheme = ?, expiry = ?, renewed = 1 WHERE id = ?",
                    [sealed, pan.last4, pan.scheme.rawValue, expiry.description, id])
            }
        }
    }

    /// The id of a card other than `id` whose number is `pan`. Numbers are sealed, so the cards sharing the last four
    /// digits are opened and compared.
    private func otherCard(carrying pan: PAN, besides id: String, in tx: Transaction) throws -> String? {
        let rows = try tx.query("SELECT id, pan_sealed FROM cards WHERE last4 = ? AND id != ?", [pan.last4, id])
        for row in rows {
            let other = try row.text(0)
            if try vault.openPAN(try row.blob(1), recordID: "card:\(other)") == pan { return other }
        }
        return nil
    }

    /// The refusal of a number already in use, masked to its last four digits like every message the issuer gives.
    static func numberInUse(_ pan: PAN, by cardID: String) -> String {
        "the card number ending \(pan.last4) is already used by card \(cardID); a renewed card needs a number of its own"
    }

    /// The digital card ids the issuer let the TSP create for a card (approved or stepped up), oldest first.
    func digitalCardIDs(ofCard id: String) throws(IssuerError) -> [String] {
        try storage("list the tokens of card \(id)") {
            try database.query(
                """
                SELECT digital_card_id FROM decisions
                WHERE card_id = ? AND decision != 'DECLINED' AND digital_card_id != ''
                GROUP BY digital_card_id ORDER BY MIN(id)
                """, [id]
            ).map { try $0.text(0) }
        }
    }
}
