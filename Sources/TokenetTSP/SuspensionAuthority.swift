/// Who may lift a token's suspension: the party that suspended it, or one above it.
///
/// An issuer suspends a token when it suspects fraud or the card is reported lost, and the TSP's operator may do
/// the same; were the wallet able to resume such a token, whoever holds the device could undo that decision. So
/// the parties are ranked wallet < issuer < TSP: a suspension stands until a party of its suspender's rank or
/// above resumes it, and a higher party suspending a token that is already suspended takes the suspension over,
/// so that the wallet's own earlier suspension cannot be used to lift the issuer's. The suspender is read from the
/// token's history (the actor of its latest move to SUSPENDED), where every change of state is recorded.
enum SuspensionAuthority: Int, Comparable, Sendable {
    case wallet = 0
    case issuer = 1
    case tsp = 2

    /// The rank of an actor as the token history records it: `wallet`, `issuer` (or `issuer:ID`, `issuer-app:…`),
    /// `tsp`. An actor this version does not know ranks highest, so that nothing it suspended can be lifted by
    /// mistake.
    init(actor: String) {
        let party = actor.split(separator: ":", maxSplits: 1).first.map(String.init) ?? actor
        switch party {
        case "wallet": self = .wallet
        case "issuer", "issuer-app": self = .issuer
        default: self = .tsp
        }
    }

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    var name: String {
        switch self {
        case .wallet: "the wallet"
        case .issuer: "the issuer"
        case .tsp: "the TSP"
        }
    }

    /// What a suspend or resume of a SUSPENDED token comes to, given who holds its suspension.
    enum Decision: Equatable, Sendable {
        /// Left to the lifecycle state machine: a resume by a party entitled to it.
        case proceed
        /// A higher party suspends a suspended token: it becomes the suspension's holder; the state stays.
        case takeOver
        /// A resume by a party below the suspender, or a suspend by a party that does not outrank it, with the
        /// message a person can act on.
        case refuse(String)
    }

    static func decide(
        resuming: Bool, by party: SuspensionAuthority, heldBy holder: SuspensionAuthority, reason: String,
        token digitalCardID: String
    ) -> Decision {
        guard resuming else {
            guard party <= holder else { return .takeOver }
            // Named with its holder and reason: the state machine's bare "cannot suspend a token that is SUSPENDED"
            // left an operator retrying after a lost answer unable to tell their own suspension from another's.
            let why = reason.isEmpty ? "" : ", \(reason)"
            return .refuse("token \"\(digitalCardID)\" is already SUSPENDED (by \(holder.name)\(why))")
        }
        guard party < holder else { return .proceed }
        let entitled = holder == .tsp ? "the TSP" : "\(holder.name) or the TSP"
        return .refuse(
            "token \"\(digitalCardID)\" was suspended by \(holder.name) (\(reason)); only \(entitled) may resume it")
    }
}
