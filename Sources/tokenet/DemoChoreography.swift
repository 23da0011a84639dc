import TokenetNode

/// The running nodes, as the choreography sees them.
struct DemoCluster: Sendable {
    /// Ready information per role, in start order.
    var nodes: [(role: NodeRole, ready: ReadyInfo)]
    /// Where Tools/gen-certs wrote the certificates; nil when the nodes run with --plaintext.
    var pkiDirectory: String?
    /// The demo's temporary directory.
    var workspace: String

    func address(of role: NodeRole) -> String? {
        nodes.first { $0.role == role }?.ready.listen
    }
}

/// What the demo does between "every node is ready" and "stop every node".
///
/// The demo runs `HealthChoreography` (every node answers a health check) and then `ProvisioningChoreography`
/// (cards provisioned across the three nodes); later flows (ID&V, activation, notifications) plug in here too.
protocol DemoChoreography {
    /// A line describing what the choreography does, printed before it runs.
    var title: String { get }
    func run(cluster: DemoCluster, report: (String) -> Void) throws(CLIError)
}
