import Foundation
import TokenetCard
import TokenetStorage
import TokenetWire

/// One-time codes for ID&V: a fresh code and the digest the TSP stores instead of it.
enum OTPCode {
    /// How many decimal digits every code has.
    static let length = 6

    /// Six random decimal digits from the system's secure generator.
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = String(UInt32.random(in: 0..<1_000_000, using: &generator))
        return String(repeating: "0", count: length - digits.count) + digits
    }

    /// Whether `code` could be a code at all: exactly six ASCII decimal digits. Anything else is refused before it
    /// reaches the state machine, so a typo such as "abc" or "12345" uses none of the cardholder's tries.
    static func isWellFormed(_ code: String) -> Bool {
        code.utf8.count == length && code.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The stored form of a code: keyed with the TSP's vault and bound to the token, so neither reading the database
    /// (a million candidates hash in under a second) nor copying a digest to another token gives a code away.
    static func digest(_ code: String, digitalCardID: String, vault: DataVault) throws -> [UInt8] {
        try vault.digest(Array("\(digitalCardID):\(code)".utf8), purpose: "otp-v2")
    }

    /// The unkeyed form codes were stored in before: a code issued then and still valid (for its ten minutes across
    /// an upgrade) is checked against it.
    static func legacyDigest(_ code: String, digitalCardID: String) throws -> [UInt8] {
        try SHA256.hash(Array("tokenet-otp-v1:\(digitalCardID):\(code)".utf8))
    }
}

extension TSPStore {
    /// The cardholder picks an OTP method for an INACTIVE token. `candidateCode` is delivered only when the result
    /// says `.deliver`; otherwise the code already out stays the only valid one. Also returns the challenge it
    /// replaced (none for a first code, the expired one otherwise), for `otpDeliveryFailed`.
    func selectOTP(
        digitalCardID: String, methodID: String, candidateCode: String, policy: OTPStateMachine.Policy,
        cardCodesPerDay: Int = .max, nowMs: UInt64
    ) throws -> (action: OTPStateMachine.DeliveryAction, previous: OTPStateMachine.Challenge?) {
        let digest = try OTPCode.digest(candidateCode, digitalCardID: digitalCardID, vault: vault)
        return try database.transaction { tx in
            try requireAwaitingIDV(tx, digitalCardID)
            let previous = try challenge(tx, digitalCardID)
            var machine = OTPStateMachine(policy: policy, challenge: previous)
            let action = machine.select(methodID: methodID, candidateDigest: digest, nowMs: nowMs)
            // Another method picked while a code is out, with the card's codes of the day used up: the code out
            // stands, as when no resend is left, instead of a refusal that read as if no code could be entered.
            if case .deliver = action, let out = previous, out.status == .pending, nowMs < out.expiresAtMs,
                try !cardHasCodesLeft(tx, digitalCardID: digitalCardID, limit: cardCodesPerDay, nowMs: nowMs)
            {
                return (
                    .alreadySent(
                        methodID: out.methodID, expiresAtMs: out.expiresAtMs, attemptsLeft: out.attemptsLeft,
                        resendsLeft: out.resendsLeft), previous
                )
            }
            try save(tx, digitalCardID, machine.challenge, nowMs: nowMs)
            if case .deliver = action {
                try recordCodeSent(tx, digitalCardID: digitalCardID, limit: cardCodesPerDay, nowMs: nowMs)
                try markDelivering(tx, digitalCardID, replaced: previous)
            }
            return (action, previous)
        }
    }

    /// The code `code` could not be delivered: the challenge goes back to `previous`, as it was before the code was
    /// issued (`OTPStateMachine.deliveryFailed`), unless it changed meanwhile.
    func otpDeliveryFailed(
        digitalCardID: String, code: String, previous: OTPStateMachine.Challenge?, policy: OTPStateMachine.Policy,
        nowMs: UInt64
    ) throws {
        let digest = try OTPCode.digest(code, digitalCardID: digitalCardID, vault: vault)
        try database.transaction { tx in
            try forgetCodeSent(tx, digitalCardID: digitalCardID)
            var machine = OTPStateMachine(policy: policy, challenge: try challenge(tx, digitalCardID))
            guard machine.challenge != nil else { return }
            machine.deliveryFailed(digest: digest, previous: previous)
            guard machine.challenge != nil else {
                _ = try tx.execute("DELETE FROM otp_challenges WHERE digital_card_id = ?", [digitalCardID])
                return
            }
            try save(tx, digitalCardID, machine.challenge, nowMs: nowMs)
            try clearDelivering(tx, digitalCardID)
        }
    }

    /// The issuer may have delivered `code`: its answer was lost (a deadline, a cancel, a connection cut after the
    /// request went out). The code stays valid, and so do the codes it replaced that may be the cardholder's
    /// (`markUncertain`), until a delivery the issuer confirms.
    func otpDeliveryUncertain(digitalCardID: String, code: String) throws {
        let digest = try OTPCode.digest(code, digitalCardID: digitalCardID, vault: vault)
        try database.transaction { tx in
            guard
                try tx.queryOne(
                    "SELECT 1 FROM otp_challenges WHERE digital_card_id = ? AND code_digest = ? AND delivering = 1",
                    [digitalCardID, digest]) != nil
            else { return }
            try markUncertain(tx, digitalCardID)
        }
    }

    /// The issuer delivered `code`: it is the one the cardholder holds, and no longer withdrawn at a restart; the
    /// earlier codes whose delivery was uncertain are no longer taken.
    func otpDelivered(digitalCardID: String, code: String) throws {
        let digest = try OTPCode.digest(code, digitalCardID: digitalCardID, vault: vault)
        _ = try database.execute(
            """
            UPDATE otp_challenges SET delivering = 0, replaced = NULL, earlier = NULL
            WHERE digital_card_id = ? AND code_digest = ?
            """, [digitalCardID, digest])
    }

    /// At start: the codes whose delivery the last run left without an outcome (it crashed while the issuer was
    /// asked) may have reached the cardholder, as a code whose answer was lost may: each stays valid, with the codes
    /// it replaced (`markUncertain`). They used to be withdrawn, and the SMS the issuer had sent was refused as
    /// wrong, or as "no code was sent". Returns how many there were.
    func keepUnconfirmedOTPCodes() throws -> Int {
        try database.transaction { tx in
            let rows = try tx.query(
                "SELECT digital_card_id FROM otp_challenges WHERE delivering = 1 ORDER BY digital_card_id")
            for row in rows { try markUncertain(tx, try row.text(0)) }
            return rows.count
        }
    }

    /// An explicit resend: a new code replaces the old one while resends are left. Also returns the challenge it
    /// replaced, for `otpDeliveryFailed`.
    func resendOTP(
        digitalCardID: String, candidateCode: String, policy: OTPStateMachine.Policy, cardCodesPerDay: Int = .max,
        nowMs: UInt64
    ) throws -> (action: OTPStateMachine.DeliveryAction, previous: OTPStateMachine.Challenge?) {
        let digest = try OTPCode.digest(candidateCode, digitalCardID: digitalCardID, vault: vault)
        return try database.transaction { tx in
            try requireAwaitingIDV(tx, digitalCardID)
            let previous = try challenge(tx, digitalCardID)
            var machine = OTPStateMachine(policy: policy, challenge: previous)
            let action = machine.resend(candidateDigest: digest, nowMs: nowMs)
            try save(tx, digitalCardID, machine.challenge, nowMs: nowMs)
            if case .deliver = action {
                try recordCodeSent(tx, digitalCardID: digitalCardID, limit: cardCodesPerDay, nowMs: nowMs)
                try markDelivering(tx, digitalCardID, replaced: previous)
            }
            return (action, previous)
        }
    }

    /// Checks a submitted code; the right one activates the token and records who and why in its audit trail, in
    /// the same transaction as the code's new state. A value that cannot be a code (not six digits) is refused with
    /// INVALID_ARGUMENT and uses no try; a well-formed wrong code uses one. What `announce` makes of the token
    /// after an activation is journaled with it.
    func submitOTP(
        digitalCardID: String, code: String, policy: OTPStateMachine.Policy, actor: String, traceID: String,
        nowMs: UInt64, announce: (TokenRecord) throws -> [Announcement] = { _ in [] }
    ) throws -> Journaled<OTPStateMachine.SubmitResult> {
        guard OTPCode.isWellFormed(code) else {
            throw TSPError(
                .invalidArgument,
                "code must be the \(OTPCode.length) digits the cardholder received; a malformed code uses no try")
        }
        let keyed = try OTPCode.digest(code, digitalCardID: digitalCardID, vault: vault)
        let legacy = try OTPCode.legacyDigest(code, digitalCardID: digitalCardID)
        var activated: TokenRecord?
        return try journaling(
            { tx in
                try requireAwaitingIDV(tx, digitalCardID)
                var machine = OTPStateMachine(policy: policy, challenge: try challenge(tx, digitalCardID))
                let stored = machine.challenge?.codeDigest ?? []
                let digest = OTPStateMachine.constantTimeEqual(stored, legacy) ? legacy : keyed
                let earlier = try earlierChallenges(tx, digitalCardID)
                let result = machine.submit(digest: digest, nowMs: nowMs, earlier: earlier)
                try save(tx, digitalCardID, machine.challenge, nowMs: nowMs)
                if result == .success, let methodID = machine.challenge?.methodID {
                    try activate(
                        tx, digitalCardID, actor: actor, reason: "ID&V one-time code verified (method \(methodID))",
                        traceID: traceID, nowMs: nowMs)
                    activated = try tx.queryOne(
                        "SELECT \(Self.tokenColumns) FROM tokens WHERE digital_card_id = ?", [digitalCardID]
                    ).map(Self.token(from:))
                }
                return result
            }, announce: { _ in try activated.map(announce) ?? [] })
    }

    /// Activates a token on the issuer's word (the call centre). Activating an ACTIVE token is a harmless success;
    /// a DEACTIVATED or SUSPENDED token is refused. What `announce` makes of the token is journaled with it.
    func activateToken(
        digitalCardID: String, actor: String, reason: String, traceID: String, nowMs: UInt64,
        announce: (TokenRecord) throws -> [Announcement] = { _ in [] }
    ) throws -> Journaled<TokenRecord> {
        try journaling(
            { tx in
                try activate(tx, digitalCardID, actor: actor, reason: reason, traceID: traceID, nowMs: nowMs)
                guard
                    let row = try tx.queryOne(
                        "SELECT \(Self.tokenColumns) FROM tokens WHERE digital_card_id = ?", [digitalCardID])
                else { throw TSPError(.notFound, "token \"\(digitalCardID)\" is unknown to this token service") }
                return try Self.token(from: row)
            }, announce: announce)
    }

    /// The ID&V methods the issuer offered for a token, in the order it offered them.
    func idvMethods(of digitalCardID: String) throws -> [CardV1.IdvMethod] {
        try database.query(
            """
            SELECT method_id, type, masked_value, app_identifier, app_action FROM token_idv_methods
            WHERE digital_card_id = ? ORDER BY position
            """, [digitalCardID]
        ).map { row in
            CardV1.IdvMethod(
                id: try row.text(0), type: CardV1.IdvMethodType(rawValue: Int32(try row.int(1))),
                maskedValue: try row.text(2), appIdentifier: try row.text(3), appAction: try row.text(4))
        }
    }

    func insertIdvMethods(_ tx: Transaction, _ digitalCardID: String, _ methods: [CardV1.IdvMethod]) throws {
        for (position, method) in methods.enumerated() {
            _ = try tx.execute(
                """
                INSERT OR REPLACE INTO token_idv_methods (digital_card_id, position, method_id, type, masked_value,
                    app_identifier, app_action)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    digitalCardID, position, method.id, Int(method.type.rawValue), method.maskedValue,
                    method.appIdentifier, method.appAction,
                ])
        }
    }

    // MARK: Helpers inside a transaction

    private func tokenState(_ tx: Transaction, _ digitalCardID: String) throws -> TokenLifecycleStateMachine.State {
        guard
            let row = try tx.queryOne("SELECT state FROM tokens WHERE digital_card_id = ?", [digitalCardID])
        else { throw TSPError(.notFound, "token \"\(digitalCardID)\" is unknown to this token service") }
        return TokenLifecycleStateMachine.State(rawValue: try row.text(0)) ?? .deactivated
    }

    /// One-time codes are only for a token waiting for ID&V.
    private func requireAwaitingIDV(_ tx: Transaction, _ digitalCardID: String) throws {
        let state = try tokenState(tx, digitalCardID)
        guard state == .inactive else {
            throw TSPError(
                .failedPrecondition,
                "token \"\(digitalCardID)\" is \(state); one-time codes are only for an INACTIVE token awaiting ID&V"
                    + (state == .deactivated ? try Self.deactivatedHint(of: digitalCardID, tx.queryOne) : ""))
        }
    }

    private func activate(
        _ tx: Transaction, _ digitalCardID: String, actor: String, reason: String, traceID: String, nowMs: UInt64
    ) throws {
        var lifecycle = TokenLifecycleStateMachine(state: try tokenState(tx, digitalCardID))
        switch lifecycle.activate() {
        case .transitioned(let from, let to):
            // A token whose digitization waits for the issuer's decision is INACTIVE too, but has nothing to verify
            // yet: activated by the call centre then, it took payments, and the issuer's decline that followed
            // (or its approval of a deleted token) overwrote the change.
            if try tx.queryOne(
                "SELECT 1 FROM digitize_requests WHERE digital_card_id = ? AND status = 'pending'", [digitalCardID])
                != nil
            {
                throw TSPError(
                    .failedPrecondition,
                    "token \"\(digitalCardID)\" is waiting for the issuer's decision on its digitization; it can be "
                        + "activated once the issuer has asked for ID&V (the wallet's add-card or accept-terms "
                        + "finishes the digitization)")
            }
            // Every ID&V path (one-time code, call centre, issuer app) ends here: none may give the card a second
            // live token on the device.
            try requireNoLiveSibling(tx, of: digitalCardID)
            try setState(
                tx, token: digitalCardID, from: from, to: to, actor: actor, reason: reason, traceID: traceID,
                nowMs: nowMs)
        case .unchanged:
            break
        case .rejected(let rejection):
            let hint = rejection.state == .deactivated ? try Self.deactivatedHint(of: digitalCardID, tx.queryOne) : ""
            throw TSPError(.failedPrecondition, "token \"\(digitalCardID)\": \(rejection.message)\(hint)")
        }
    }

    private func challenge(_ tx: Transaction, _ digitalCardID: String) throws -> OTPStateMachine.Challenge? {
        guard
            let row = try tx.queryOne(
                """
                SELECT method_id, code_digest, expires_at_ms, attempts_left, resends_left, status
                FROM otp_challenges WHERE digital_card_id = ?
                """, [digitalCardID])
        else { return nil }
        return OTPStateMachine.Challenge(
            methodID: try row.text(0), codeDigest: try row.get(1), expiresAtMs: UInt64(try row.int64(2)),
            attemptsLeft: try row.int(3), resendsLeft: try row.int(4),
            status: OTPStateMachine.Status(rawValue: try row.text(5)) ?? .locked)
    }

    /// The codes a resend replaced whose delivery is uncertain (`markUncertain`), oldest first; none while a
    /// delivery is under way: one that then fails for sure gives the replaced code back its tries, and wrong codes
    /// tried against it meanwhile (counted on the new code's) would be free guesses.
    private func earlierChallenges(_ tx: Transaction, _ digitalCardID: String) throws -> [OTPStateMachine.Challenge] {
        guard
            let row = try tx.queryOne(
                "SELECT earlier FROM otp_challenges WHERE digital_card_id = ? AND delivering = 0", [digitalCardID]),
            let earlier = try row.get(0, as: String?.self)
        else { return [] }
        return (try? JSONDecoder().decode([OTPStateMachine.Challenge].self, from: Data(earlier.utf8))) ?? []
    }

    /// The code being delivered may have reached the cardholder: it is no longer under way (nor withdrawn at a
    /// restart), and the code it replaced, if still pending, joins the earlier codes that stay right (at most
    /// `earlierKept`, the newest).
    private func markUncertain(_ tx: Transaction, _ digitalCardID: String) throws {
        var earlier =
            try tx.queryOne(
                "SELECT earlier, replaced FROM otp_challenges WHERE digital_card_id = ?", [digitalCardID]
            ).map { row -> [OTPStateMachine.Challenge] in
                var codes =
                    try row.get(0, as: String?.self).flatMap {
                        try? JSONDecoder().decode([OTPStateMachine.Challenge].self, from: Data($0.utf8))
                    } ?? []
                if let replaced = try row.get(1, as: String?.self),
                    let previous = try? JSONDecoder().decode(OTPStateMachine.Challenge.self, from: Data(replaced.utf8)),
                    previous.status == .pending
                {
                    codes.append(previous)
                }
                return codes
            } ?? []
        earlier = Array(earlier.suffix(Self.earlierKept))
        let encoded = earlier.isEmpty ? nil : String(decoding: try JSONEncoder().encode(earlier), as: UTF8.self)
        _ = try tx.execute(
            "UPDATE otp_challenges SET delivering = 0, replaced = NULL, earlier = ? WHERE digital_card_id = ?",
            [encoded, digitalCardID])
    }

    /// The most earlier codes kept right: a token gets at most four codes, so three is every one before the newest.
    static let earlierKept = 3

    /// The code just saved is on its way to the issuer; `replaced` is what it replaced (nil for a first code).
    private func markDelivering(
        _ tx: Transaction, _ digitalCardID: String, replaced: OTPStateMachine.Challenge?
    ) throws {
        let encoded = try replaced.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        _ = try tx.execute(
            "UPDATE otp_challenges SET delivering = 1, replaced = ? WHERE digital_card_id = ?",
            [encoded, digitalCardID])
    }

    private func clearDelivering(_ tx: Transaction, _ digitalCardID: String) throws {
        _ = try tx.execute(
            "UPDATE otp_challenges SET delivering = 0, replaced = NULL WHERE digital_card_id = ?", [digitalCardID])
    }

    private func save(
        _ tx: Transaction, _ digitalCardID: String, _ challenge: OTPStateMachine.Challenge?, nowMs: UInt64
    ) throws {
        guard let challenge else { return }
        _ = try tx.execute(
            """
            INSERT INTO otp_challenges (digital_card_id, method_id, code_digest, expires_at_ms, attempts_left,
                resends_left, status, updated_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(digital_card_id) DO UPDATE SET method_id = excluded.method_id,
                code_digest = excluded.code_digest, expires_at_ms = excluded.expires_at_ms,
                attempts_left = excluded.attempts_left, resends_left = excluded.resends_left,
                status = excluded.status, updated_at_ms = excluded.updated_at_ms
            """,
            [
                digitalCardID, challenge.methodID, challenge.codeDigest, Int64(challenge.expiresAtMs),
                challenge.attemptsLeft, challenge.resendsLeft, challenge.status.rawValue, Int64(nowMs),
            ])
    }
}
