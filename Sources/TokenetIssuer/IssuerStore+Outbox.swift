import Foundation
import TokenetCard
import TokenetStorage
import TokenetWire

extension IssuerStore {
    /// The card behind a token, from the issuer's own digitization decisions; nil for a token it never decided.
    func card(forDigitalCardID digitalCardID: String) throws(IssuerError) -> StoredCard? {
        let cardID = try storage("look up a token's card") {
            try database.queryOne(
                """
                SELECT card_id FROM decisions WHERE digital_card_id = ? AND card_id IS NOT NULL
                ORDER BY id DESC LIMIT 1
                """, [digitalCardID]
            ).map { try $0.text(0) }
        }
        guard let cardID else { return nil }
        return try card(id: cardID)
    }

    /// Records a delivered message. The outbox stands in for the SMS and e-mail gateways, so it holds the text the
    /// cardholder would read, code included; it is shown to operators only, never logged.
    func recordOutbox(_ message: IssuerV1.OutboxMessage) throws(IssuerError) {
        _ = try storage("record a sent message") {
            try database.execute(
                """
                INSERT INTO outbox (sent_at_ms, digital_card_id, channel, masked_destination, text)
                VALUES (?, ?, ?, ?, ?)
                """,
                [
                    Int64(message.sentAtMs), message.digitalCardID, message.channel, message.maskedDestination,
                    message.text,
                ])
        }
    }

    /// The messages sent, oldest first; only one token's when `digitalCardID` is given.
    func outbox(digitalCardID: String?) throws(IssuerError) -> [IssuerV1.OutboxMessage] {
        try storage("list the outbox") {
            let columns = "SELECT sent_at_ms, channel, masked_destination, text, digital_card_id FROM outbox"
            let rows =
                if let digitalCardID {
                    try database.query("\(columns) WHERE digital_card_id = ? ORDER BY id", [digitalCardID])
                } else {
                    try database.query("\(columns) ORDER BY id")
                }
            return try rows.map { row in
                IssuerV1.OutboxMessage(
                    sentAtMs: UInt64(try row.int64(0)), channel: try row.text(1), maskedDestination: try row.text(2),
                    text: try row.text(3), digitalCardID: try row.text(4))
            }
        }
    }
}
