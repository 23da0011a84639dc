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

    /// The method types the issuer's latest decision on the token offered for its step-up (none when that decision
    /// was no step-up).
    func offeredMethodTypes(forDigitalCardID digitalCardID: String) throws(IssuerError) -> [IdvMethodSpec.Kind] {
        try storage("look up the methods offered for a token") {
            guard
                let row = try database.queryOne(
                    "SELECT idv_methods FROM decisions WHERE digital_card_id = ? ORDER BY id DESC LIMIT 1",
                    [digitalCardID])
            else { return [] }
            let names = try JSONDecoder().decode([String].self, from: Data(try row.text(0).utf8))
            return names.compactMap(IdvMethodSpec.Kind.init(rawValue:))
        }
    }

    /// When each message is no longer needed (`IssuerRetention.outboxMessageEndsAtMs`), so the outbox is pruned
    /// through an index. Those recorded before knew no code expiry: they end the longest code lifetime after they
    /// were sent.
    static let outboxEndsSchema = """
        ALTER TABLE outbox ADD COLUMN ends_at_ms INTEGER NOT NULL DEFAULT 0;
        UPDATE outbox SET ends_at_ms = sent_at_ms + \(IssuerRetention.longestActivationLifetimeMs);
        CREATE INDEX outbox_by_end ON outbox(ends_at_ms);
        """

    /// Records a delivered message whose code expires at `codeExpiresAtMs` (0: unknown). The outbox stands in for
    /// the SMS and e-mail gateways, so it holds the text the cardholder would read, code included; it is shown to
    /// operators only, never logged, and kept until `pruneOutbox` removes it.
    func recordOutbox(_ message: IssuerV1.OutboxMessage, codeExpiresAtMs: UInt64) throws(IssuerError) {
        let endsAtMs = IssuerRetention.outboxMessageEndsAtMs(
            codeExpiresAtMs: codeExpiresAtMs, sentAtMs: message.sentAtMs)
        _ = try storage("record a sent message") {
            try database.execute(
                """
                INSERT INTO outbox (sent_at_ms, digital_card_id, channel, masked_destination, text, ends_at_ms)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
                [
                    Int64(clamping: message.sentAtMs), message.digitalCardID, message.channel,
                    message.maskedDestination, message.text, Int64(clamping: endsAtMs),
                ])
        }
    }

    /// Deletes the messages no longer needed at or before `cutoffMs` (`ends_at_ms`); returns how many.
    @discardableResult
    func pruneOutbox(endedAtOrBefore cutoffMs: UInt64) throws(IssuerError) -> Int {
        try storage("prune the outbox") {
            try database.execute("DELETE FROM outbox WHERE ends_at_ms <= ?", [Int64(clamping: cutoffMs)]).changes
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
