import TokenetStorage

extension TSPStore {
    /// The TSP's schema, one migration per step. Card numbers live only in DataVault-sealed blobs.
    static let migrations: [Migration] = [
        Migration(
            version: 1, name: "provisioning",
            sql: """
                CREATE TABLE issuers (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    encryption_key_pem TEXT NOT NULL,
                    peer_node_id TEXT,
                    updated_at_ms INTEGER NOT NULL
                );
                CREATE TABLE issuer_bin_ranges (
                    issuer_id TEXT NOT NULL REFERENCES issuers(id) ON DELETE CASCADE,
                    low TEXT NOT NULL,
                    high TEXT NOT NULL
                );
                CREATE INDEX issuer_bin_ranges_issuer ON issuer_bin_ranges(issuer_id);
                CREATE TABLE eligibility_receipts (
                    receipt TEXT PRIMARY KEY,
                    wallet_account_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    issuer_id TEXT NOT NULL REFERENCES issuers(id),
                    scheme TEXT NOT NULL,
                    pan_last4 TEXT NOT NULL,
                    card_data BLOB NOT NULL,
                    input_method INTEGER NOT NULL,
                    terms_id TEXT,
                    created_at_ms INTEGER NOT NULL,
                    expires_at_ms INTEGER NOT NULL,
                    used_by_request_id TEXT
                );
                CREATE TABLE tokens (
                    digital_card_id TEXT PRIMARY KEY,
                    scheme TEXT NOT NULL,
                    token_pan BLOB NOT NULL,
                    token_last4 TEXT NOT NULL,
                    token_expiry TEXT NOT NULL,
                    funding_pan BLOB NOT NULL,
                    pan_last4 TEXT NOT NULL,
                    issuer_id TEXT NOT NULL REFERENCES issuers(id),
                    wallet_account_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    state TEXT NOT NULL,
                    decided_by TEXT,
                    created_at_ms INTEGER NOT NULL,
                    updated_at_ms INTEGER NOT NULL
                );
                CREATE INDEX tokens_wallet ON tokens(wallet_account_id, device_id);
                CREATE TABLE token_events (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    digital_card_id TEXT NOT NULL REFERENCES tokens(digital_card_id),
                    at_ms INTEGER NOT NULL,
                    from_state TEXT,
                    to_state TEXT NOT NULL,
                    actor TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    trace_id TEXT NOT NULL
                );
                CREATE INDEX token_events_token ON token_events(digital_card_id, id);
                CREATE TABLE digitize_requests (
                    request_id TEXT PRIMARY KEY,
                    receipt TEXT NOT NULL REFERENCES eligibility_receipts(receipt),
                    digital_card_id TEXT NOT NULL REFERENCES tokens(digital_card_id),
                    status TEXT NOT NULL CHECK (status IN ('pending', 'done')),
                    response BLOB,
                    created_at_ms INTEGER NOT NULL
                );
                CREATE TABLE push_receipts (
                    payload TEXT PRIMARY KEY,
                    issuer_id TEXT NOT NULL REFERENCES issuers(id),
                    scheme TEXT NOT NULL,
                    card_data BLOB NOT NULL,
                    created_at_ms INTEGER NOT NULL,
                    expires_at_ms INTEGER NOT NULL,
                    used_at_ms INTEGER
                );
                CREATE TABLE push_sessions (
                    id TEXT PRIMARY KEY,
                    wallet_account_id TEXT NOT NULL,
                    card_data BLOB NOT NULL,
                    created_at_ms INTEGER NOT NULL,
                    expires_at_ms INTEGER NOT NULL,
                    used_at_ms INTEGER
                );
                """),
        Migration(
            version: 2, name: "otp",
            sql: """
                CREATE TABLE otp_challenges (
                    digital_card_id TEXT PRIMARY KEY REFERENCES tokens(digital_card_id),
                    method_id TEXT NOT NULL,
                    code_digest BLOB NOT NULL,
                    expires_at_ms INTEGER NOT NULL,
                    attempts_left INTEGER NOT NULL,
                    resends_left INTEGER NOT NULL,
                    status TEXT NOT NULL CHECK (status IN ('pending', 'verified', 'locked')),
                    updated_at_ms INTEGER NOT NULL
                );
                CREATE TABLE token_idv_methods (
                    digital_card_id TEXT NOT NULL REFERENCES tokens(digital_card_id),
                    position INTEGER NOT NULL,
                    method_id TEXT NOT NULL,
                    type INTEGER NOT NULL,
                    masked_value TEXT NOT NULL,
                    app_identifier TEXT NOT NULL,
                    app_action TEXT NOT NULL,
                    PRIMARY KEY (digital_card_id, method_id)
                );
                """),
        NotificationStore.migration,
        Migration(
            version: 4, name: "strong-authentication",
            sql: """
                CREATE TABLE auth_enrolments (
                    reference_id TEXT PRIMARY KEY,
                    issuer_id TEXT NOT NULL REFERENCES issuers(id),
                    user_id TEXT NOT NULL,
                    account_id TEXT NOT NULL,
                    code_digest BLOB NOT NULL,
                    expires_at_ms INTEGER NOT NULL,
                    attempts_left INTEGER NOT NULL,
                    status TEXT NOT NULL
                        CHECK (status IN ('pending', 'activated', 'exhausted', 'superseded')),
                    created_at_ms INTEGER NOT NULL,
                    updated_at_ms INTEGER NOT NULL
                );
                CREATE INDEX auth_enrolments_account ON auth_enrolments(issuer_id, user_id, account_id);
                CREATE TABLE auth_credentials (
                    id TEXT PRIMARY KEY,
                    issuer_id TEXT NOT NULL REFERENCES issuers(id),
                    user_id TEXT NOT NULL,
                    account_id TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('user', 'device')),
                    pair_id TEXT NOT NULL,
                    secret_sealed BLOB NOT NULL,
                    digits INTEGER NOT NULL,
                    counter INTEGER NOT NULL,
                    failures INTEGER NOT NULL,
                    locked INTEGER NOT NULL,
                    display_name TEXT NOT NULL,
                    created_at_ms INTEGER NOT NULL,
                    updated_at_ms INTEGER NOT NULL
                );
                CREATE INDEX auth_credentials_account ON auth_credentials(issuer_id, user_id, account_id);
                """),
        // The issuer's account of each token's card, from its digitization decision: in-app activation checks
        // that the signed-in cardholder owns it. NULL for tokens the stand-in decided or older issuers.
        Migration(
            version: 5, name: "token_issuer_account",
            sql: "ALTER TABLE tokens ADD COLUMN issuer_account_id TEXT;"),
        Migration(
            version: 6, name: "lifecycle",
            sql: """
                ALTER TABLE tokens ADD COLUMN wallet_node_id TEXT;
                ALTER TABLE tokens ADD COLUMN last_call_at_ms INTEGER;
                CREATE TABLE transactions (
                    id TEXT PRIMARY KEY,
                    digital_card_id TEXT NOT NULL REFERENCES tokens(digital_card_id),
                    amount_minor INTEGER NOT NULL,
                    currency TEXT NOT NULL,
                    merchant TEXT NOT NULL,
                    approved INTEGER NOT NULL,
                    at_ms INTEGER NOT NULL,
                    authn_request_id TEXT UNIQUE,
                    authn_status TEXT CHECK (authn_status IN ('PENDING', 'PROCEEDED', 'CANCELLED')),
                    authn_expires_at_ms INTEGER,
                    authn_answered_at_ms INTEGER
                );
                CREATE INDEX transactions_token ON transactions(digital_card_id, at_ms);
                CREATE TABLE key_batches (
                    id TEXT PRIMARY KEY,
                    digital_card_id TEXT NOT NULL REFERENCES tokens(digital_card_id),
                    keys_issued INTEGER NOT NULL,
                    keys_remaining_before INTEGER NOT NULL,
                    at_ms INTEGER NOT NULL
                );
                """),
        // The wallet account an issuer pushed a receipt to; only that account redeems it. NULL: any account.
        Migration(
            version: 7, name: "push_receipt_wallet_account",
            sql: "ALTER TABLE push_receipts ADD COLUMN wallet_account_id TEXT;"),
        // A known plaintext sealed with the vault key (`VaultKeyFile`): a start with another key is refused.
        Migration(
            version: 8, name: "vault_key_check",
            sql: """
                CREATE TABLE vault_key_check (
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                    sealed BLOB NOT NULL
                );
                """),
        // The orders `ListTokens` pages walk, for every account and for one: without them each page read and
        // sorted every token, and listing 200,000 tokens in pages took minutes instead of seconds.
        Migration(
            version: 9, name: "token_listing_order",
            sql: """
                CREATE INDEX tokens_created ON tokens(created_at_ms, digital_card_id);
                CREATE INDEX tokens_wallet_created ON tokens(wallet_account_id, created_at_ms, digital_card_id);
                """),
        // The expiry (MM/YY) of each token's funding card, set at digitization and by each renewal, so the issuer
        // can learn whether a renewal changing the expiry only was applied (GetFundingCards). NULL for tokens made
        // before it was recorded and not renewed since.
        Migration(version: 10, name: "token_funding_expiry", sql: "ALTER TABLE tokens ADD COLUMN funding_expiry TEXT;"),
        // The order `ListTransactions` pages of every token walk (time, then row id, which the index holds); one
        // token's pages walk `transactions_token`. Without it each page read and sorted every transaction.
        Migration(
            version: 11, name: "transaction_listing_order",
            sql: "CREATE INDEX transactions_made ON transactions(at_ms);"),
        // The notifications a state change commits with it, until the broker has stored them (`TSPStore+Journal`).
        TSPStore.journalMigration,
        // What the step-up expiry (`expireStepUps`, before each Digitize and ID&V call) and the same-card rules
        // look for: INACTIVE tokens by age, and the digitizations still pending. Without them each such call read
        // every token and every digitization ever made. Partial: the rows they hold are few and short-lived.
        Migration(
            version: 13, name: "step_up_lookups",
            sql: """
                CREATE INDEX tokens_inactive_age ON tokens(updated_at_ms) WHERE state = 'INACTIVE';
                CREATE INDEX digitize_requests_pending ON digitize_requests(digital_card_id) WHERE status = 'pending';
                """),
        // The version of each token's state (`TokenRecord.stateVersion`), sent with it so that a wallet that hears
        // of two changes out of order keeps the later. Tokens made before it start at 1 like new ones.
        Migration(
            version: 15, name: "token_state_version",
            sql: "ALTER TABLE tokens ADD COLUMN state_version INTEGER NOT NULL DEFAULT 1;"),
        // An AUTHN nobody answered is stored EXPIRED (`expireAuthns`), which the table's CHECK did not allow:
        // SQLite changes a CHECK only by copying the table, row ids kept (ListTransactions page keys hold them), and
        // its indexes made again. Plus what the expiry, every second, looks for: the requests still waiting, by
        // expiry. Partial: few payments wait for an answer at once, and without it each sweep read every
        // transaction.
        Migration(
            version: 16, name: "authn_expiry",
            sql: """
                CREATE TABLE transactions_authn_expiry (
                    id TEXT PRIMARY KEY,
                    digital_card_id TEXT NOT NULL REFERENCES tokens(digital_card_id),
                    amount_minor INTEGER NOT NULL,
                    currency TEXT NOT NULL,
                    merchant TEXT NOT NULL,
                    approved INTEGER NOT NULL,
                    at_ms INTEGER NOT NULL,
                    authn_request_id TEXT UNIQUE,
                    authn_status TEXT CHECK (authn_status IN ('PENDING', 'PROCEEDED', 'CANCELLED', 'EXPIRED')),
                    authn_expires_at_ms INTEGER,
                    authn_answered_at_ms INTEGER
                );
                INSERT INTO transactions_authn_expiry (rowid, id, digital_card_id, amount_minor, currency, merchant,
                    approved, at_ms, authn_request_id, authn_status, authn_expires_at_ms, authn_answered_at_ms)
                SELECT rowid, id, digital_card_id, amount_minor, currency, merchant, approved, at_ms,
                    authn_request_id, authn_status, authn_expires_at_ms, authn_answered_at_ms
                FROM transactions;
                DROP TABLE transactions;
                ALTER TABLE transactions_authn_expiry RENAME TO transactions;
                CREATE INDEX transactions_token ON transactions(digital_card_id, at_ms);
                CREATE INDEX transactions_made ON transactions(at_ms);
                CREATE INDEX transactions_authn_pending ON transactions(authn_expires_at_ms)
                    WHERE authn_status = 'PENDING';
                """),
        // The wallet's id for a key-batch request (`ReplenishPaymentKeysRequest.request_id`): asked again with it, the
        // TSP answers with the batch it issued, so an answer the wallet never recorded is not followed by a second
        // batch. Batches issued before this migration have none.
        Migration(
            version: 17, name: "key_batch_request_ids",
            sql: """
                ALTER TABLE key_batches ADD COLUMN request_id TEXT;
                CREATE UNIQUE INDEX key_batches_request ON key_batches(digital_card_id, request_id)
                    WHERE request_id IS NOT NULL;
                """),
        // Whether a row's sealed card data still holds the card's security code (CVV2). It is needed only until the
        // issuer has decided the digitization (a pending one asks the issuer again with it) or the push receipt or
        // session is redeemed: then the card data is sealed again without it (`forgetSpentCardData`), and rows that
        // expired unused are deleted. 1 for every row stored before, which the first sweep goes through. Partial
        // indexes hold just the rows the sweep looks for, so the sweep every minute reads those, not every receipt.
        Migration(
            version: 18, name: "card_security_codes_forgotten",
            sql: """
                ALTER TABLE eligibility_receipts ADD COLUMN security_code_kept INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE push_receipts ADD COLUMN security_code_kept INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE push_sessions ADD COLUMN security_code_kept INTEGER NOT NULL DEFAULT 1;
                CREATE INDEX eligibility_receipts_code_kept ON eligibility_receipts(receipt)
                    WHERE security_code_kept = 1;
                CREATE INDEX eligibility_receipts_unused ON eligibility_receipts(expires_at_ms)
                    WHERE used_by_request_id IS NULL;
                CREATE INDEX push_receipts_code_kept ON push_receipts(payload) WHERE security_code_kept = 1;
                CREATE INDEX push_receipts_unused ON push_receipts(expires_at_ms) WHERE used_at_ms IS NULL;
                CREATE INDEX push_sessions_code_kept ON push_sessions(id) WHERE security_code_kept = 1;
                CREATE INDEX push_sessions_unused ON push_sessions(expires_at_ms) WHERE used_at_ms IS NULL;
                """),
        // Each one-time code sent, for the cap on codes per card a day (`recordCodeSent`); rows older than a day are
        // deleted as new ones come.
        Migration(
            version: 19, name: "otp_sends",
            sql: """
                CREATE TABLE otp_sends (
                    id INTEGER PRIMARY KEY,
                    digital_card_id TEXT NOT NULL REFERENCES tokens(digital_card_id),
                    sent_at_ms INTEGER NOT NULL
                );
                CREATE INDEX otp_sends_time ON otp_sends(sent_at_ms);
                CREATE INDEX otp_sends_token ON otp_sends(digital_card_id);
                """),
        // The wallet node that created each push session (the node id of its certificate): only that node may
        // redeem it. Another wallet node whose account had the same name added the card. NULL for sessions made
        // before, which any node of their account may still redeem until they expire.
        Migration(
            version: 20, name: "push_session_wallet_node",
            sql: """
                ALTER TABLE push_sessions ADD COLUMN wallet_node_id TEXT;
                """),
        // The wallet node a push receipt is for, when the issuer named one (CreatePushReceipt wallet_node_id): only
        // that node may redeem it. Another wallet node that named the same account redeemed it. NULL for any node.
        Migration(
            version: 21, name: "push_receipt_wallet_node",
            sql: """
                ALTER TABLE push_receipts ADD COLUMN wallet_node_id TEXT;
                """),
        // A code whose delivery the issuer has not confirmed yet (`delivering`), with the challenge it replaced
        // (`replaced`, JSON; NULL for a first code): a TSP that stopped while the issuer delivered it kept the new
        // code in place of the one the cardholder held, used up a resend, and answered the next select that a code
        // was out. (At start such a code was withdrawn as a failed delivery is; since migration 23 it is kept as one
        // whose answer was lost, `keepUnconfirmedOTPCodes`.)
        Migration(
            version: 22, name: "otp_unconfirmed_delivery",
            sql: """
                ALTER TABLE otp_challenges ADD COLUMN delivering INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE otp_challenges ADD COLUMN replaced TEXT;
                """),
        // The codes a resend replaced while the outcome of its delivery is unknown (the issuer's answer was lost, or
        // the TSP crashed meanwhile), JSON, oldest first: the cardholder may hold any of them, and each is right
        // until its own expiry, until a delivery the issuer confirms (`otpDelivered`). Withdrawn as an undelivered
        // code was, the SMS the issuer had sent was refused as wrong, or as "no code was sent".
        Migration(
            version: 23, name: "otp_earlier_codes", sql: "ALTER TABLE otp_challenges ADD COLUMN earlier TEXT;"),
        // The node instance that registered each issuer (RegisterIssuerRequest.instance_id, '' when none was given):
        // after a restart the TSP no longer knows which instance holds each stream, and a second node started with
        // the running node's certificate registered first and took its key, BIN ranges and stream.
        Migration(
            version: 24, name: "issuer_instance",
            sql: "ALTER TABLE issuers ADD COLUMN instance_id TEXT NOT NULL DEFAULT '';"),
        // The wallet node that checked each card's eligibility (the node id of its certificate): a receipt is spent
        // by that node only, as a push session is. NULL for receipts made before, and in plaintext.
        Migration(
            version: 25, name: "eligibility_receipt_wallet_node",
            sql: "ALTER TABLE eligibility_receipts ADD COLUMN wallet_node_id TEXT;"),
        // Digitize request ids are each wallet node's own (the node id of its certificate; '' in plaintext): a
        // second wallet node that numbered its requests as the first did had its Digitize refused as "already used
        // with another eligibility receipt". The key becomes (wallet node, request id), copied from the token the
        // request made (or its receipt; '' when neither names a node), by copying the table, whose key SQLite cannot
        // change in place. Finishing a request finds it by its token, and a spent receipt's request by the receipt.
        Migration(
            version: 26, name: "digitize_requests_per_wallet_node",
            sql: """
                CREATE TABLE digitize_requests_per_node (
                    wallet_node_id TEXT NOT NULL DEFAULT '',
                    request_id TEXT NOT NULL,
                    receipt TEXT NOT NULL REFERENCES eligibility_receipts(receipt),
                    digital_card_id TEXT NOT NULL REFERENCES tokens(digital_card_id),
                    status TEXT NOT NULL CHECK (status IN ('pending', 'done')),
                    response BLOB,
                    created_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (wallet_node_id, request_id)
                );
                INSERT INTO digitize_requests_per_node (wallet_node_id, request_id, receipt, digital_card_id, status,
                    response, created_at_ms)
                SELECT COALESCE(t.wallet_node_id, e.wallet_node_id, ''), d.request_id, d.receipt, d.digital_card_id,
                    d.status, d.response, d.created_at_ms
                FROM digitize_requests d
                LEFT JOIN tokens t ON t.digital_card_id = d.digital_card_id
                LEFT JOIN eligibility_receipts e ON e.receipt = d.receipt;
                DROP TABLE digitize_requests;
                ALTER TABLE digitize_requests_per_node RENAME TO digitize_requests;
                CREATE INDEX digitize_requests_pending ON digitize_requests(digital_card_id) WHERE status = 'pending';
                CREATE INDEX digitize_requests_token ON digitize_requests(digital_card_id);
                CREATE INDEX digitize_requests_receipt ON digitize_requests(receipt);
                """),
        // Each party's suspension of a token (`SuspensionAuthority`): several may stand at once, and each is lifted
        // by its own party. Kept after a token's deletion, for `HeldSuspension`. Filled from the history, for a token
        // SUSPENDED, or deleted while SUSPENDED: each party's latest move to SUSPENDED since the token was last in
        // another state, unless that move lifted the party's own (a renewal's event suspends nothing). A suspension
        // an issuer or the TSP "took over" under the rules before stands beside the one it took over: the safe
        // reading, in which the upgrade lifts nobody's suspension.
        Migration(
            version: 27, name: "token_suspensions",
            sql: """
                CREATE TABLE token_suspensions (
                    digital_card_id TEXT NOT NULL REFERENCES tokens(digital_card_id),
                    party TEXT NOT NULL CHECK (party IN ('wallet', 'issuer', 'tsp')),
                    actor TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    at_ms INTEGER NOT NULL,
                    event_id INTEGER NOT NULL,
                    PRIMARY KEY (digital_card_id, party)
                );
                INSERT INTO token_suspensions (digital_card_id, party, actor, reason, at_ms, event_id)
                SELECT e.digital_card_id, CASE
                    WHEN e.actor = 'wallet' OR e.actor LIKE 'wallet:%' THEN 'wallet'
                    WHEN e.actor = 'issuer' OR e.actor LIKE 'issuer:%' OR e.actor = 'issuer-app'
                        OR e.actor LIKE 'issuer-app:%' THEN 'issuer'
                    ELSE 'tsp'
                END, e.actor, e.reason, e.at_ms, e.id
                FROM token_events e
                WHERE e.reason NOT LIKE '%; lifts %' AND e.id IN (
                    SELECT MAX(s.id) FROM token_events s JOIN tokens t ON t.digital_card_id = s.digital_card_id
                    WHERE s.to_state = 'SUSPENDED' AND s.reason NOT LIKE 'card renewed; %'
                        AND s.id > COALESCE((
                            SELECT MAX(b.id) FROM token_events b
                            WHERE b.digital_card_id = s.digital_card_id
                                AND b.to_state NOT IN ('SUSPENDED', 'DEACTIVATED')), 0)
                        AND (t.state = 'SUSPENDED'
                            OR (t.state = 'DEACTIVATED' AND (
                                SELECT d.from_state FROM token_events d
                                WHERE d.digital_card_id = t.digital_card_id AND d.to_state = 'DEACTIVATED'
                                ORDER BY d.id DESC LIMIT 1) = 'SUSPENDED'))
                    GROUP BY s.digital_card_id, CASE
                            WHEN s.actor = 'wallet' OR s.actor LIKE 'wallet:%' THEN 'wallet'
                            WHEN s.actor = 'issuer' OR s.actor LIKE 'issuer:%' OR s.actor = 'issuer-app'
                                OR s.actor LIKE 'issuer-app:%' THEN 'issuer'
                            ELSE 'tsp'
                        END);
                """),
        TSPStore.paymentAccountReferenceMigration,
    ]
}
