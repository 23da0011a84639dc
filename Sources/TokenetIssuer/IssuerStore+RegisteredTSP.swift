import TokenetStorage

/// The node id of the TSP the issuer last registered with, kept across restarts: until the issuer reaches its TSP
/// again after a start, only that node may ask it for decisions and codes (`TSPLink.requireOwnTSP`). Kept in memory
/// alone, a restart while the TSP was away let any certificate with the tsp role ask.
extension IssuerStore {
    static let registeredTSPSchema = """
        CREATE TABLE registered_tsp (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1), node_id TEXT NOT NULL);
        """

    /// The TSP node the issuer last registered with; nil before its first registration.
    func registeredTSPNodeID() throws(IssuerError) -> String? {
        try storage("read the TSP the issuer registered with") {
            try database.queryOne("SELECT node_id FROM registered_tsp WHERE singleton = 1").map { try $0.text(0) }
        }
    }

    func setRegisteredTSP(nodeID: String) throws(IssuerError) {
        try storage("record the TSP the issuer registered with") {
            _ = try database.execute(
                "INSERT INTO registered_tsp (singleton, node_id) VALUES (1, ?) "
                    + "ON CONFLICT (singleton) DO UPDATE SET node_id = excluded.node_id",
                [nodeID])
        }
    }
}
