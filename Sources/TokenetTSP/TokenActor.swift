/// How a token's history names the party that changed it (`TokenEvent.actor`): the TSP as `tsp` (or `stand-in` for
/// its stand-in rule's decision), every other party as PARTY:ID, a wallet by its node (`wallet:wallet-1`), an issuer
/// by the token's issuer id (`issuer:tokenet-bank`), an issuer app by its issuer and user. A call-centre activation
/// was recorded `issuer:ID` while the issuer's other changes were a bare `issuer` (and a wallet's suspend a bare
/// `wallet` beside its ID&V's `wallet:ID`), so the history read as if two parties had acted. Rows stored before keep
/// their form; `SuspensionAuthority` finds the party of either by the part before the colon.
enum TokenActor {
    static func wallet(node nodeID: String?) -> String { "wallet:\(nodeID ?? "unknown")" }

    static func issuer(_ issuerID: String) -> String { "issuer:\(issuerID)" }

    static func issuerApp(_ issuerID: String, user userID: String) -> String { "issuer-app:\(issuerID)/\(userID)" }
}
