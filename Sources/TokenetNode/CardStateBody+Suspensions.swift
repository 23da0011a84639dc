import TokenetWire

extension TspV1.CardStateBody {
    /// The suspensions a SUSPENDED token holds, for people, when the change alone does not tell them: several stand
    /// at once (`; held by wallet (DEVICE_LOST), issuer (LOST_CARD)`), or the change lifted the initiator's own while
    /// others stand (`; wallet's suspension lifted, still held by issuer (LOST_CARD)`), which read like a suspension
    /// by the wallet. Empty when the one suspension is the change's own.
    public var heldSuspensionsShown: String {
        guard tokenState == .suspended, !suspensions.isEmpty else { return "" }
        if suspensions.count == 1, suspensions[0].party == initiator, suspensions[0].reasonCode == reasonCode {
            return ""
        }
        let held = suspensions.map { $0.reasonCode.isEmpty ? $0.party : "\($0.party) (\($0.reasonCode))" }
        guard suspensions.contains(where: { $0.party == initiator }) || initiator.isEmpty else {
            return "; \(initiator)'s suspension lifted, still held by " + held.joined(separator: ", ")
        }
        return "; held by " + held.joined(separator: ", ")
    }
}
