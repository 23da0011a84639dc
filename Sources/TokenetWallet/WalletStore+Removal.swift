import TokenetStorage

/// Removing a card that never got a token (one the cardholder did not accept the T&C of, or that was declined) or
/// whose token has ended.
extension WalletStore {
    /// Removes card `id` if it still has no token and no Digitize waits for an answer (`CardDeletePlan.removeCard`),
    /// judged in the write itself: an AcceptTerms that began meanwhile keeps the card, since its Digitize may make
    /// a token. Returns whether the card was removed. Its id is not given to another card (`AUTOINCREMENT`).
    public func removeTokenlessCard(id: Int64) throws(WalletError) -> Bool {
        try run("remove the card") {
            try database.transaction { tx in
                try tx.execute(
                    """
                    DELETE FROM cards
                    WHERE id = ? AND COALESCE(digital_card_id, '') = ''
                        AND (result IS NOT NULL OR digitize_request_id IS NULL)
                    """, [id]
                ).changes > 0
            }
        }
    }

    /// Removes card `id`, whose token has ended (`CardDeletePlan.removeEndedCard`), with its payment keys and its
    /// place as the selected card. DEACTIVATED is final, so nothing can change the card between the caller's read
    /// and this write.
    public func removeEndedCard(id: Int64) throws(WalletError) {
        try run("remove the card") {
            try database.transaction { tx in
                _ = try tx.execute("DELETE FROM payment_keys WHERE card_id = ?", [id])
                _ = try tx.execute("UPDATE selection SET selected_card_id = NULL WHERE selected_card_id = ?", [id])
                _ = try tx.execute("DELETE FROM cards WHERE id = ?", [id])
            }
        }
    }
}
