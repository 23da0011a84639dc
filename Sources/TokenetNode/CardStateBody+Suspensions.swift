import TokenetWire

extension TspV1.CardStateBody {
    /// The suspensions a SUSPENDED token holds, for people, when the change alone does not tell them: several stand
    /// at once, or the change lifted one while another stands (`; held by the issuer (LOST_CARD)`). Empty when the
    /// one suspension is the change's own.
    public var heldSuspensionsShown: String {
        guard tokenState == .suspended, !suspensions.isEmpty else { return "" }
        if suspensions.count == 1, suspensions[0].party == initiator, suspensions[0].reasonCode == reasonCode {
            return ""
        }
        let held = suspensions.map { $0.reasonCode.isEmpty ? $0.party : "\($0.party) (\($0.reasonCode))" }
        return "; held by " + held.joined(separator: ", ")
    }
}
