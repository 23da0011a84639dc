import TokenetStorage

/// Removing a card that never got a token: one the cardholder did not accept the T&C of, or that was declined.
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
}
