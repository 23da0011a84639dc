import Foundation

/// A data directory that holds another party's files.
///
/// Each party's files have names of their own (`tsp.sqlite`, `issuer.sqlite`, `wallet.sqlite`, their keys), so a
/// node pointed at another's directory found no database of its own and started as a new, empty node there: it
/// added its files beside the other's and took over the files the parties share by name, such as the wallet's and
/// the issuer's `node-instance`, which tell the TSP's broker which instance of a subscriber it is talking to. Such a
/// directory is a mistake in the node's options, refused before the node writes anything there.
public enum ForeignDatabaseCheck {
    /// The files that show a party used a directory, with the nodes they belong to. `node-instance` is the wallet's
    /// and the issuer's alike, so it tells only a tsp-node that the directory is another's.
    static let marks: [(file: String, what: String, owners: Set<String>, ownerText: String)] = [
        ("tsp.sqlite", "database", ["tsp-node"], "a tsp-node"),
        ("keys/data-vault.key", "vault key", ["tsp-node"], "a tsp-node"),
        ("keys/card-key-current.pem", "card-data key", ["tsp-node"], "a tsp-node"),
        ("keys/access-token.key", "access-token key", ["tsp-node"], "a tsp-node"),
        ("issuer.sqlite", "database", ["issuer-node"], "an issuer-node"),
        ("issuer-vault.key", "vault key", ["issuer-node"], "an issuer-node"),
        ("issuer-key.pem", "card-data key", ["issuer-node"], "an issuer-node"),
        ("wallet.sqlite", "database", ["wallet-node"], "a wallet-node"),
        (NodeInstance.fileName, "instance file", ["wallet-node", "issuer-node"], "a wallet-node or an issuer-node"),
    ]

    /// Why `spec`'s node must not start on `directory`, or nil when no other party's file is there.
    public static func problem(directory: String, spec: NodeSpec) -> String? {
        guard spec.database != nil else { return nil }
        for mark in marks where !mark.owners.contains(spec.name) {
            guard FileManager.default.fileExists(atPath: directory + "/" + mark.file) else { continue }
            return "the data directory \(directory) holds \(mark.file), the \(mark.what) of \(mark.ownerText): each "
                + "node needs a data directory of its own; give this \(spec.name) another --data-dir"
        }
        return nil
    }
}
