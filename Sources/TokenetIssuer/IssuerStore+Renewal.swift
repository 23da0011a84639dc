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
    func renewCard(id: String, pan: PAN, expiry: CardExpiry) throws(IssuerError) {
        let sealed: [UInt8]
        do {
            sealed = try vault.seal(pan, recordID: "card:\(id)")
        } catch {
            throw IssuerError(.keys, "cannot seal the renewed card \(id)", cause: error)
        }
        _ = try storage("renew card \(id)") {
            try database.execute(
                "UPDATE cards SET pan_sealed = ?, last4 = ?, scheme = ?, expiry = ?, renewed = 1 WHERE id = ?",
                [sealed, pan.last4, pan.scheme.rawValue, expiry.description, id])
        }
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
