import Foundation
import TokenetScenario

/// `identity ROLE` and `identity ROLE/ID`: the certificate of the calls below. A role's is the PKI's `ROLE.pem`;
/// an identity of the script's own (`wallet/my-wallet`) is `ID.pem`, which a sandbox the run started gets from
/// `Tools/gen-certs --node ROLE/ID` the first time a line names it, so that a wallet under test is not taken for the
/// sandbox's own wallet-node (its tokens, its notification queue).
extension ScenarioRunner {
    /// The name of the certificate files (`NAME.pem`, `NAME.key`) in `pki` that `identity` (as the line wrote it)
    /// presents. The role's own ID (`wallet/wallet-1`) is the role's certificate, `wallet.pem`, unless the PKI has
    /// an `ID.pem` of its own: Tools/gen-certs makes none for an ID its role certificate holds (it refuses, and the
    /// line failed as it ran), but a PKI made otherwise may have one.
    static func certificateName(for identity: String, in pki: URL) -> String {
        guard let own = Scenario.ownIdentity(identity) else { return identity }
        guard own.id == Scenario.pkiID(of: own.role),
            !FileManager.default.fileExists(atPath: pki.appendingPathComponent("\(own.id).pem").path)
        else { return own.id }
        return own.role
    }

    /// The name of the certificate files (`NAME.pem`, `NAME.key`) in the PKI for `role`, made first when needed.
    func certificate(for role: String, line: Int) throws -> String {
        let name = Self.certificateName(for: role, in: pki)
        // Only an ID that is not one of the PKI's own certificates is made.
        let own = Scenario.ownIdentity(role).flatMap { $0.id == name ? $0 : nil }
        let file = pki.appendingPathComponent("\(name).pem").path
        if FileManager.default.fileExists(atPath: file) { return name }
        guard let own, nodes != nil else {
            let hint =
                own.map { " (make it with: tokenet pki init \(pki.path) --node \($0.role)/\($0.id))" } ?? ""
            throw Failure(
                line: line, reason: "identity \(role): \(pki.path) has no \(name).pem\(hint)", scriptError: true)
        }
        guard let root = RepositoryLocator.repositoryRoot else {
            throw Failure(
                line: line, reason: "identity \(role): Tools/gen-certs, which makes its certificate, is not found")
        }
        do {
            try Sandbox.runGenCerts(
                root.appendingPathComponent("Tools/gen-certs"),
                arguments: ["--node", "\(own.role)/\(own.id)", pki.path],
                workspace: pki.deletingLastPathComponent(), timeout: 60, name: "gen-certs-\(own.id)")
        } catch {
            throw Failure(line: line, reason: "identity \(role): \(error.message)")
        }
        guard FileManager.default.fileExists(atPath: file) else {
            throw Failure(line: line, reason: "identity \(role): Tools/gen-certs did not make \(file)")
        }
        print(line, "identity \(role): certificate \(file) made by Tools/gen-certs (tokenet://\(own.role)/\(own.id))")
        return name
    }
}
