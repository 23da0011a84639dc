import TokenetWire

/// What the TSP decides on the issuer's behalf when the issuer is unreachable or too slow (stand-in processing).
///
/// The sandbox rule approves only low-risk provisionings: the wallet recommends approval and both its account and
/// device scores are at most `maximumApprovedScore` (scores run 1 = lowest risk to 5). Everything else — including
/// a request with no risk data — is declined, because a wrongly approved token is worse than a retry.
public struct StandInPolicy: Sendable, Equatable {
    public var maximumApprovedScore: UInt32

    public init(maximumApprovedScore: UInt32 = 2) {
        self.maximumApprovedScore = maximumApprovedScore
    }

    /// A policy that never approves without the issuer.
    public static let alwaysDecline = StandInPolicy(maximumApprovedScore: 0)

    public enum Decision: Sendable, Equatable {
        case approve
        case decline(reason: String)
    }

    /// The decision for `risk`; a decline's reason starts with `issuer`, what became of the issuer's answer ("the
    /// issuer did not answer", or that its answer could not be used: a wallet told the issuer "did not answer" when
    /// it had answered sent the issuer's developers looking at the network).
    public func decide(risk: CardV1.WalletRiskData?, issuer: String = "the issuer did not answer") -> Decision {
        guard let risk else {
            return .decline(reason: "\(issuer) and the wallet sent no risk data (stand-in declined)")
        }
        guard risk.recommendation == .approve else {
            return .decline(reason: "\(issuer) and the wallet did not recommend approval (stand-in)")
        }
        let scoresKnown = risk.accountScore >= 1 && risk.deviceScore >= 1
        guard scoresKnown, risk.accountScore <= maximumApprovedScore, risk.deviceScore <= maximumApprovedScore else {
            return .decline(
                reason: "\(issuer) and the risk (account \(risk.accountScore), device \(risk.deviceScore)) is above "
                    + "the stand-in approval limit \(maximumApprovedScore)")
        }
        return .approve
    }
}
