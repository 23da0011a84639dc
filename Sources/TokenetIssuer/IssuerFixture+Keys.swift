import Foundation

extension IssuerFixture {
    /// Refuses a key the fixture format does not have, naming the entry and the key but never a value: decoding
    /// alone skips it, so a misspelt `"notEligibleReson"` would leave a card eligible, or an `"idv"` under an
    /// approve rule would look like ID&V the issuer never asks for.
    static func checkKeys(_ data: Data) throws(IssuerError) {
        // A document of another shape is reported by the decoder, with its path.
        guard let top = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return }
        try check(top, "the top level", ["issuer", "cardholders", "accounts", "cards"])
        if let issuer = top["issuer"] as? [String: Any] {
            try check(issuer, "issuer", ["id", "name", "binRanges", "callCenterNumber"])
            try each(issuer["binRanges"], "issuer.binRanges", ["low", "high"])
        }
        try each(top["cardholders"], "cardholders", ["id", "name", "phone", "email"])
        try each(top["accounts"], "accounts", ["id", "cardholderId"])
        let cardKeys = [
            "id", "accountId", "pan", "expiry", "cvc", "cardholderName", "notEligibleReason", "digitization",
        ]
        for (index, card) in ((top["cards"] as? [Any]) ?? []).enumerated() {
            guard let card = card as? [String: Any] else { continue }
            let name = (card["id"] as? String).map { "cards[\(index)] \"\($0)\"" } ?? "cards[\(index)]"
            try check(card, name, cardKeys)
            guard let rule = card["digitization"] as? [String: Any] else { continue }
            let ruleKeys: [String]
            switch rule["rule"] as? String {
            case "approve": ruleKeys = ["rule"]
            case "decline": ruleKeys = ["rule", "reason"]
            case "step-up": ruleKeys = ["rule", "idv"]
            default: ruleKeys = ["rule", "approveAtMost", "stepUpAtMost", "idv", "declineReason"]
            }
            try check(rule, "\(name) digitization", ruleKeys)
            try each(rule["idv"], "\(name) digitization.idv", ["type", "appIdentifier", "appAction", "appName"])
        }
    }

    private static func each(_ value: Any?, _ name: String, _ keys: [String]) throws(IssuerError) {
        for (index, entry) in ((value as? [Any]) ?? []).enumerated() {
            if let entry = entry as? [String: Any] { try check(entry, "\(name)[\(index)]", keys) }
        }
    }

    private static func check(_ object: [String: Any], _ name: String, _ keys: [String]) throws(IssuerError) {
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw IssuerError(
                .fixture, "\(name): unknown key \"\(unknown)\" (known: \(keys.joined(separator: ", ")))")
        }
    }
}
