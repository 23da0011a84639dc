import Foundation

/// A data directory that holds another party's database.
///
/// Each party's files have names of their own (`tsp.sqlite`, `issuer.sqlite`, `wallet.sqlite`), so a node pointed
/// at another's directory found no database of its own and started as a new, empty node there: it added its files
/// beside the other's and took over the files the parties share by name, such as the wallet's and the issuer's
/// `node-instance`, which tell the TSP's broker which instance of a subscriber it is talking to. Such a directory is
/// a mistake in the node's options, refused before the node writes anything there.
public enum ForeignDatabaseCheck {
    /// The nodes whose databases are looked for.
    static let parties: [NodeSpec] = [.tsp, .issuer, .wallet]

    /// Why `spec`'s node must not start on `directory`, or nil when no other party's database is there.
    public static func problem(directory: String, spec: NodeSpec) -> String? {
        guard let own = spec.database?.file else { return nil }
        for other in parties {
            guard let database = other.database?.file, database != own,
                FileManager.default.fileExists(atPath: directory + "/" + database)
            else { continue }
            return "the data directory \(directory) holds \(database), a \(other.name)'s database: each node needs "
                + "a data directory of its own; give this \(spec.name) another --data-dir"
        }
        return nil
    }
}
