import TokenetStorage

extension IssuerStore {
    /// The cardholder an account belongs to.
    func cardholderID(ofAccount accountID: String) throws(IssuerError) -> String? {
        try storage("look up an account's cardholder") {
            try database.queryOne("SELECT cardholder_id FROM accounts WHERE id = ?", [accountID]).map { try $0.text(0) }
        }
    }

    /// Every card of the cardholder, across their accounts: the cards an issuer app signed in as them shows.
    func cards(ofCardholder cardholderID: String) throws(IssuerError) -> [StoredCard] {
        let ids = try storage("list a cardholder's cards") {
            try database.query(
                """
                SELECT cards.id FROM cards JOIN accounts ON accounts.id = cards.account_id
                WHERE accounts.cardholder_id = ? ORDER BY cards.id
                """, [cardholderID]
            ).map { try $0.text(0) }
        }
        var cards: [StoredCard] = []
        for id in ids { if let card = try card(id: id) { cards.append(card) } }
        return cards
    }
}
