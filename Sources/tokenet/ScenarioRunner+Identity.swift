import Foundation
import TokenetScenario

/// `identity ROLE` and `identity ROLE/ID`: the certificate of the calls below. A role's is the PKI's `ROLE.pem`;
/// an identity of the script's own (`wallet/my-wallet`) is `ID.pem`, which a sandbox the run started gets from
/// `Tools/gen-certs --node ROLE/ID` the first time a line names it, so that a wallet under test is not taken for the
/// sandbox's own wallet-node (its tokens, its notification queue).
extension ScenarioRunner {
    /// The name of the certificate files (`NAME.pem`, `NAME.key`) in the PKI for `role`, made first when needed.
    func certificate(for role: String, line: Int) throws -> String {
        let own = Scenario.ownIdentity(role)
        let name = own?.id ?? role
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
