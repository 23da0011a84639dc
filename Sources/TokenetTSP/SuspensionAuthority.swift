/// Who holds a token's suspensions, and what a suspend or a resume of a SUSPENDED token comes to.
///
/// As in MDES, the wallet, the issuer and the TSP may each suspend a token, and several may at once: the
/// cardholder's lost phone and the issuer's fraud case are two suspensions, and each is lifted by the party that
/// placed it. The token is ACTIVE again only when none is left. A party may lift only its own: an issuer clearing
/// its fraud case must not re-enable a phone the cardholder reported lost, and whoever holds the device must not
/// undo the issuer's decision. The TSP's operator is the exception: its resume lifts every suspension, the
/// platform's last word. The suspensions are kept per token and party (`token_suspensions`), also after the token
/// is deleted, where `HeldSuspension` reads them.
enum SuspensionAuthority: Int, Comparable, Sendable {
    case wallet = 0
    case issuer = 1
    case tsp = 2

    /// The party of an actor as the token history records it: `wallet` (or `wallet:ID`), `issuer` (or `issuer:ID`,
    /// `issuer-app:…`), `tsp`. An actor this version does not know counts as the TSP, so that nothing it suspended
    /// can be lifted by another party by mistake.
    init(actor: String) {
        let party = actor.split(separator: ":", maxSplits: 1).first.map(String.init) ?? actor
        switch party {
        case "wallet": self = .wallet
        case "issuer", "issuer-app": self = .issuer
        default: self = .tsp
        }
    }

    /// The party as `token_suspensions` stores it and CARD_STATE names it.
    init?(party: String) {
        switch party {
        case "wallet": self = .wallet
        case "issuer": self = .issuer
        case "tsp": self = .tsp
        default: return nil
        }
    }

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    var party: String {
        switch self {
        case .wallet: "wallet"
        case .issuer: "issuer"
        case .tsp: "tsp"
        }
    }

    var name: String {
        switch self {
        case .wallet: "the wallet"
        case .issuer: "the issuer"
        case .tsp: "the TSP"
        }
    }

    /// A suspension a party holds on a token.
    struct Held: Equatable, Sendable {
        var party: SuspensionAuthority
        /// The token history's actor that placed it (`wallet:ID`, `issuer:ID`, `tsp`).
        var actor: String
        var reason: String

        /// `the issuer (LOST_CARD)`.
        var shown: String { reason.isEmpty ? party.name : "\(party.name) (\(reason))" }
    }

    /// What a suspend or resume of a SUSPENDED token comes to, given the suspensions it holds.
    enum Decision: Equatable, Sendable {
        /// Left to the lifecycle state machine: the token becomes ACTIVE (its last suspension lifted by its holder,
        /// or the TSP's operator lifting them all).
        case proceed
        /// The party's suspension is placed beside the others'; the token stays SUSPENDED.
        case add
        /// The party lifts its own suspension; the others' keep the token SUSPENDED.
        case lift(remaining: [Held])
        /// A suspend by a party that holds a suspension already, or a resume by one that holds none, with the
        /// message a person can act on.
        case refuse(String)
    }

    static func decide(
        resuming: Bool, by party: SuspensionAuthority, held: [Held], token digitalCardID: String
    ) -> Decision {
        let own = held.first { $0.party == party }
        guard resuming else {
            // Named with its reason: the state machine's bare "cannot suspend a token that is SUSPENDED" left an
            // operator retrying after a lost answer unable to tell their own suspension from another's.
            guard let own else { return .add }
            let why = own.reason.isEmpty ? "" : ", \(own.reason)"
            return .refuse("token \"\(digitalCardID)\" is already SUSPENDED (by \(party.name)\(why))")
        }
        let others = held.filter { $0.party != party }
        if party == .tsp || others.isEmpty { return .proceed }
        guard own != nil else {
            let holders = others.sorted { $0.party < $1.party }
            var entitled = holders.map(\.party.name)
            if !holders.contains(where: { $0.party == .tsp }) { entitled.append(SuspensionAuthority.tsp.name) }
            return .refuse(
                "token \"\(digitalCardID)\" was suspended by \(listed(holders.map(\.shown))); only "
                    + "\(listed(entitled, or: true)) may resume it")
        }
        return .lift(remaining: others.sorted { $0.party < $1.party })
    }

    /// `a`, `a and b`, `a, b and c` (or `or`).
    static func listed(_ items: [String], or: Bool = false) -> String {
        guard items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + (or ? " or " : " and ") + items[items.count - 1]
    }
}
