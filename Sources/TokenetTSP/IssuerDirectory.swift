import TokenetRPC
import TokenetWire

/// Where the TSP calls each issuer it serves: at the address given for that issuer's id (`--issuer ID=HOST:PORT`),
/// or else at the one address for every other issuer (`--issuer HOST:PORT`). A TSP serves many issuers, each its
/// own node; asking one issuer about another's card would get a wrong answer, or none.
struct IssuerDirectory: Sendable {
    /// The issuers with an address of their own, by the id they register with.
    let routes: [String: any RPCCaller]
    /// Every other issuer's; nil when there is none, and their calls fail UNAVAILABLE (the stand-in decides).
    let fallback: (any RPCCaller)?

    init(routes: [String: any RPCCaller] = [:], fallback: (any RPCCaller)?) {
        self.routes = routes
        self.fallback = fallback
    }

    /// Whether calls to `issuerID` have somewhere to go.
    func hasAddress(for issuerID: String) -> Bool {
        routes[issuerID] != nil || fallback != nil
    }

    func caller(for issuerID: String) -> any RPCCaller {
        routes[issuerID] ?? fallback ?? UnreachablePeer(name: "issuer \"\(issuerID)\"")
    }

    func decisions(for issuerID: String) -> IssuerV1.IssuerDecisions.Client {
        IssuerV1.IssuerDecisions.Client(caller(for: issuerID))
    }

    func otp(for issuerID: String) -> IssuerV1.IssuerOtp.Client {
        IssuerV1.IssuerOtp.Client(caller(for: issuerID))
    }
}
