import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// Where the TSP calls each issuer it serves: at the address given for that issuer's id (`--issuer ID=HOST:PORT`),
/// or else at the one address for every other issuer (`--issuer HOST:PORT`). A TSP serves many issuers, each its
/// own node; asking one issuer about another's card would get a wrong answer, or none.
///
/// Every address is only a claim: the node that answers there must be the one that registered the issuer (its
/// certificate's `tokenet://issuer/NODE_ID`), or nothing is sent to it (`IssuerCaller`). The certificate's role alone
/// cannot tell a wrong `--issuer` from the right one, and a wrong one would hand one bank's card data and one-time
/// codes to another bank.
struct IssuerDirectory: Sendable {
    /// The issuers with an address of their own, by the id they register with.
    let routes: [String: any RPCCaller]
    /// Every other issuer's; nil when there is none, and their calls fail UNAVAILABLE (the stand-in decides).
    let fallback: (any RPCCaller)?
    /// Where a call refused for reaching the wrong node is reported (the TSP's log).
    var logger: Logger?

    init(routes: [String: any RPCCaller] = [:], fallback: (any RPCCaller)?, logger: Logger? = nil) {
        self.routes = routes
        self.fallback = fallback
        self.logger = logger
    }

    /// Whether calls to `issuerID` have somewhere to go.
    func hasAddress(for issuerID: String) -> Bool {
        routes[issuerID] != nil || fallback != nil
    }

    /// The caller for `issuer`, which goes only to the node that registered it. An issuer registered without TLS
    /// (no node id) is called unchecked: a plaintext TSP has no identities to compare.
    func caller(for issuer: IssuerRecord) -> any RPCCaller {
        let address = routes[issuer.id] ?? fallback ?? UnreachablePeer(name: "issuer \"\(issuer.id)\"")
        guard let nodeID = issuer.peerNodeID else { return address }
        return IssuerCaller(
            address: address, issuerID: issuer.id, node: PeerIdentity(role: .issuer, nodeID: nodeID),
            ownRoute: routes[issuer.id] != nil, logger: logger)
    }

    func decisions(for issuer: IssuerRecord) -> IssuerV1.IssuerDecisions.Client {
        IssuerV1.IssuerDecisions.Client(caller(for: issuer))
    }

    func otp(for issuer: IssuerRecord) -> IssuerV1.IssuerOtp.Client {
        IssuerV1.IssuerOtp.Client(caller(for: issuer))
    }
}
