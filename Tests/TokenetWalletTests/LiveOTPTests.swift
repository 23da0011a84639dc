import Foundation
import Testing

/// One-time codes over the three real processes, driven by `tokenet`: a code that expired (the TSP configured with
/// a one-millisecond code lifetime, so no test waits), malformed codes that use no try, codes exhausted by wrong tries,
/// and a resend.
@Suite(.serialized) struct LiveOTPTests {
    /// Adds the fixture card `pan` (expiry `expiry`) to the wallet as `ref`, accepts its T&C, picks otp-sms and
    /// returns the code the issuer's outbox shows for it, with the token's digital card id.
    static func codeSent(
        _ nodes: LiveProvisioningTests, ref: String, pan: String, expiry: String
    ) async throws -> (code: String, digitalCardID: String) {
        _ = try await nodes.tokenet(["wallet", "add-card", nodes.wallet.listen, "--pan", pan, "--exp", expiry])
        let accepted = try await nodes.tokenet(["wallet", "accept-terms", nodes.wallet.listen, ref, "--json"])
        let card = try #require(try nodes.json(accepted)["card"] as? [String: Any])
        let digitalCardID = try #require(card["digitalCardId"] as? String)
        let selected = try await nodes.tokenet(["wallet", "select-method", nodes.wallet.listen, ref, "otp-sms"])
        #expect(selected.stdout.contains("code sent to"), "\(selected.stdout) \(selected.stderr)")
        return (try await lastCode(nodes, digitalCardID), digitalCardID)
    }

    static func lastCode(_ nodes: LiveProvisioningTests, _ digitalCardID: String) async throws -> String {
        let outbox = try nodes.json(
            try await nodes.tokenet([
                "issuer", "outbox", nodes.issuer.listen, "--digital-card", digitalCardID, "--json",
            ]))
        let text = try #require((outbox["messages"] as? [[String: Any]])?.last?["text"] as? String)
        return String(try #require(text.firstMatch(of: /is (\d{6})\./)).output.1)
    }

    static func wrong(_ code: String) -> String { code == "000000" ? "111111" : "000000" }

    @Test func anExpiredCodeIsRefusedAndTheTokenStaysInactive() async throws {
        let nodes = try await LiveProvisioningTests(tspPolicy: #"{"otp_validity_ms": 1}"#)
        let (code, digitalCardID) = try await Self.codeSent(
            nodes, ref: "card-1", pan: "4761000030000054", expiry: "11/29")
        let late = try await nodes.tokenet(["wallet", "submit-otp", nodes.wallet.listen, "card-1", code])
        #expect(late.status == 0, "\(late.stderr)")
        #expect(late.stdout.hasPrefix("card-1: EXPIRED_CODE; token \(digitalCardID) is INACTIVE."), "\(late.stdout)")
        // The hint names the wallet called, so that it runs as printed.
        #expect(
            late.stdout.contains("send a new one with tokenet wallet resend-otp \(nodes.wallet.listen) card-1"),
            "\(late.stdout)")
        let history = try await nodes.tokenet(["tsp", "history", nodes.tsp.listen, digitalCardID])
        #expect(!history.stdout.contains("one-time code verified"), "\(history.stdout)")
    }

    @Test func exhaustedCodesAndAResend() async throws {
        let nodes = try await LiveProvisioningTests()
        // Exhausted: three wrong codes lock the code; even the right one no longer works, and no resend is allowed.
        let (code, lockedCard) = try await Self.codeSent(
            nodes, ref: "card-1", pan: "4761000030000054", expiry: "11/29")
        // A value that cannot be a code is refused and uses no try.
        for malformed in ["abc", "12345"] {
            let refused = try await nodes.tokenet(["wallet", "submit-otp", nodes.wallet.listen, "card-1", malformed])
            #expect(refused.status == 64 + 3, "\(refused.stdout) \(refused.stderr)")
            #expect(refused.stderr.contains("INVALID_ARGUMENT") && refused.stderr.contains("uses no try"))
        }
        for triesLeft in [2, 1] {
            let wrong = try await nodes.tokenet([
                "wallet", "submit-otp", nodes.wallet.listen, "card-1", Self.wrong(code),
            ])
            let left = triesLeft == 1 ? "1 try" : "\(triesLeft) tries"
            #expect(wrong.stdout.hasPrefix("card-1: INCORRECT_CODE (\(left) left)"), "\(wrong.stdout)")
        }
        let third = try await nodes.tokenet(["wallet", "submit-otp", nodes.wallet.listen, "card-1", Self.wrong(code)])
        #expect(third.stdout.hasPrefix("card-1: INCORRECT_CODE_RETRIES_EXCEEDED"), "\(third.stdout)")
        // Every one-time-code method is locked with it: the hint sends the cardholder to another kind.
        #expect(
            third.stdout.contains("by any one-time-code method: if the issuer offered another kind of method"),
            "\(third.stdout)")
        #expect(third.stdout.contains("otherwise delete the card and add it again"), "\(third.stdout)")
        #expect(
            third.stdout.contains("tokenet wallet select-method \(nodes.wallet.listen) card-1 METHOD_ID"),
            "\(third.stdout)")
        let right = try await nodes.tokenet(["wallet", "submit-otp", nodes.wallet.listen, "card-1", code])
        #expect(right.stdout.hasPrefix("card-1: INCORRECT_CODE_RETRIES_EXCEEDED; token \(lockedCard) is INACTIVE."))
        let refused = try await nodes.tokenet(["wallet", "resend-otp", nodes.wallet.listen, "card-1"])
        #expect(refused.status == 64 + 9, "\(refused.stdout) \(refused.stderr)")

        // A resend: a new code replaces the first, which no longer works; the new one activates the token.
        let (first, digitalCardID) = try await Self.codeSent(
            nodes, ref: "card-2", pan: "5400000030000074", expiry: "04/30")
        let resent = try await nodes.tokenet(["wallet", "resend-otp", nodes.wallet.listen, "card-2"])
        #expect(resent.stdout.hasPrefix("card-2: a new code was sent to "), "\(resent.stdout) \(resent.stderr)")
        #expect(resent.stdout.contains(" (method otp-"), "\(resent.stdout)")
        #expect(resent.stdout.contains(" left; the code sent before no longer works."), "\(resent.stdout)")
        let second = try await Self.lastCode(nodes, digitalCardID)
        if second != first {
            let old = try await nodes.tokenet(["wallet", "submit-otp", nodes.wallet.listen, "card-2", first])
            #expect(old.stdout.hasPrefix("card-2: INCORRECT_CODE (2 tries left)"), "\(old.stdout)")
        }
        let accepted = try await nodes.tokenet(["wallet", "submit-otp", nodes.wallet.listen, "card-2", second])
        #expect(accepted.stdout.hasPrefix("card-2: SUCCESS; token \(digitalCardID) is ACTIVE."), "\(accepted.stdout)")
        let outbox = try nodes.json(
            try await nodes.tokenet([
                "issuer", "outbox", nodes.issuer.listen, "--digital-card", digitalCardID, "--json",
            ]))
        #expect((outbox["messages"] as? [Any])?.count == 2)
    }
}
