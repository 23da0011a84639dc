import TokenetFaults
import TokenetWire

/// A scenario under faults: the demo steers the proxy between the TSP and the issuer (`DemoIssuerLink`).
extension ProvisioningChoreography {
    /// Each step of the cut-off scenario waits out the TSP's issuer deadline (5 s) before it answers, so a shorter
    /// `--timeout` would end it first.
    static let issuerCutOffNeeds = 8.0

    /// With the issuer out of reach, the TSP's own eligibility checks stand and its stand-in rule decides the
    /// digitization (each after the TSP's issuer deadline, 5 s): the demo wallet's risk (account score 3) is above
    /// the rule's approval limit (2), so the card is declined, with a reason that says the stand-in decided. Then
    /// the partition heals and every connection through the proxy is cut: the TSP reconnects on its next call, and
    /// the issuer's own refusal of a card shows that it answers again.
    func issuerCutOff(_ link: FaultProxy, _ nodes: Nodes, _ report: (String) -> Void) throws(CLIError) {
        link.set(.partition)
        report("  [proxy] tsp-node -> issuer-node: partition (nothing gets through; the TSP waits out its deadline)")
        let added = try addByHand("card-visa-standin", language: "", nodes, report)
        try expect(added.eligible, "the card to be eligible on the TSP's own checks")
        let accepted = try acceptTerms(added.cardRef, nodes, report)
        try expect(
            accepted.decision == .declined && accepted.declineReason.contains("stand-in"),
            "DECLINED by the TSP's stand-in rule (the demo wallet's risk is above its approval limit)")
        link.set(.none)
        link.reset()
        report("  [proxy] tsp-node -> issuer-node: healed, and every connection cut (the TSP reconnects)")
        let again = try addByHand("card-visa-not-eligible", language: "", nodes, report)
        try expect(!again.eligible, "the issuer to answer again and keep its card out of wallets")
    }
}
