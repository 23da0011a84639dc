/// A party a node may need to reach. The raw value is the flag and config key naming its address.
public enum NodeRole: String, CaseIterable, Sendable, Comparable {
    case tsp
    case issuer
    case wallet

    public static func < (lhs: NodeRole, rhs: NodeRole) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The executable that plays this role.
    public var nodeName: String { "\(rawValue)-node" }
}

/// What distinguishes one node executable from another: its name, what it does, and which peers it knows.
///
/// Everything else (flags, logs, signals, readiness) is shared, which is why the executables stay thin.
public struct NodeSpec: Sendable, Equatable {
    public var name: String
    public var summary: String
    public var knownPeers: [NodeRole]
    /// Whether the node accepts `--fixtures FILE` (demo data loaded at start-up).
    public var usesFixtures: Bool
    /// Whether `--issuer` may name an issuer (`ID=HOST:PORT`, repeated): the TSP serves many issuers and calls each
    /// at its own address.
    public var routesIssuersByID: Bool
    /// The node's database in its data directory, and a file an earlier start leaves beside it: together they tell
    /// a database lost since from a first start (`LostDatabaseCheck`). Nil for a node without a database.
    public var database: (file: String, marker: String)?
    /// The peers the node cannot run without (the wallet's TSP): said by `--help`, and checked before the node
    /// makes its data directory.
    public var requiredPeers: [NodeRole]

    public init(
        name: String, summary: String, knownPeers: [NodeRole], requiredPeers: [NodeRole] = [],
        usesFixtures: Bool = false, routesIssuersByID: Bool = false, database: (file: String, marker: String)? = nil
    ) {
        self.name = name
        self.summary = summary
        self.knownPeers = knownPeers
        self.requiredPeers = requiredPeers
        self.usesFixtures = usesFixtures
        self.routesIssuersByID = routesIssuersByID
        self.database = database
    }

    public static func == (lhs: NodeSpec, rhs: NodeSpec) -> Bool {
        lhs.name == rhs.name && lhs.summary == rhs.summary && lhs.knownPeers == rhs.knownPeers
            && lhs.requiredPeers == rhs.requiredPeers
            && lhs.usesFixtures == rhs.usesFixtures && lhs.routesIssuersByID == rhs.routesIssuersByID
            && lhs.database?.file == rhs.database?.file && lhs.database?.marker == rhs.database?.marker
    }

    /// The token service provider: issues tokens on behalf of issuers and serves wallets.
    public static let tsp = NodeSpec(
        name: "tsp-node",
        summary: "Token service provider: provisions tokens into wallets on behalf of card issuers.",
        knownPeers: [.issuer],
        routesIssuersByID: true,
        database: ("tsp.sqlite", "keys/data-vault.key")
    )

    /// The card issuer: decides on provisioning, runs ID&V and activation, and authenticates cardholders.
    public static let issuer = NodeSpec(
        name: "issuer-node",
        summary: "Card issuer: approves provisioning, verifies the cardholder (ID&V) and activates tokens.",
        knownPeers: [.tsp, .wallet],
        usesFixtures: true,
        database: ("issuer.sqlite", "issuer-vault.key")
    )

    /// The wallet: asks the TSP to digitize a card and holds the resulting token.
    public static let wallet = NodeSpec(
        name: "wallet-node",
        summary: "Wallet: asks the TSP to provision cards and holds the resulting tokens.",
        knownPeers: [.tsp, .issuer],
        requiredPeers: [.tsp],
        database: ("wallet.sqlite", NodeInstance.fileName)
    )
}
