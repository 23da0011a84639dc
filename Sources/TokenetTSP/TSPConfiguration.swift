import Foundation
import TokenetCard

/// The TSP's policy settings. The defaults are the sandbox's program; tests shorten or change them.
public struct TSPConfiguration: Sendable {
    /// How long an eligibility receipt can be exchanged for a token.
    public var eligibilityReceiptTTL: Duration = .seconds(10 * 60)
    /// How long an issuer's push receipt (MDES Token Connect) stays redeemable.
    public var pushReceiptTTL: Duration = .seconds(15 * 60)
    /// How long a wallet's push session stays redeemable.
    public var pushSessionTTL: Duration = .seconds(15 * 60)
    /// How long the TSP waits for the issuer's eligibility answer or digitization decision before the stand-in
    /// decides (eligibility: the TSP's own checks stand).
    public var issuerDeadline: Duration = .seconds(5)
    /// The rule applied when the issuer cannot answer a digitization in time.
    public var standIn: StandInPolicy = StandInPolicy()
    /// The T&C the cardholder accepts; `.none` for a program that needs none.
    public var terms: TermsCatalog = .sandbox
    /// The token BIN ranges token PANs are drawn from.
    public var tokenPANs: TokenPANGenerator = .sandbox()
    /// How many years a token is valid from its issue month.
    public var tokenValidityYears = 3
    /// One-time codes for ID&V: tries per code, how long a code lives, how many resends.
    public var otpMaxAttempts = 3
    public var otpValidity: Duration = .seconds(10 * 60)
    public var otpMaxResends = 3
    /// One-time codes one card gets in 24 hours, across all its tokens (each time it is added again brings a token
    /// with codes of its own).
    public var otpCodesPerCardPerDay = 10
    /// How long the cardholder has to answer a payment's authentication request (AUTHN) in the issuer app; one left
    /// unanswered then is declined, and the wallet and the issuer app are told (`TSPService.expireDueAuthns`).
    public var authnLifetime: Duration = .seconds(5 * 60)
    /// How long a token the issuer stepped up waits for ID&V before the TSP deactivates it as abandoned.
    public var stepUpValidity: Duration = .seconds(30 * 86_400)
    /// How long, and how many, unacknowledged notifications a subscriber's queue keeps.
    public var notificationRetention = NotificationRetention()
    /// Strong authentication: how long an access token lives, how long an activation code lives and how many codes
    /// may be tried, the HOTP credentials' digits, the look-ahead and resynchronisation windows, the failures that
    /// lock a credential, and the server URL put in activation links.
    public var accessTokenLifetime: Duration = .seconds(15 * 60)
    public var activationCodeValidity: Duration = .seconds(60 * 60)
    public var activationMaxAttempts = 5
    public var hotpDigits = 6
    public var hotpLookAhead = 10
    public var hotpResyncWindow = 100
    public var hotpMaxFailures = 10
    public var authServerURL = "tokenet://tsp"

    var hotpPolicy: HOTPVerifierStateMachine.Policy {
        HOTPVerifierStateMachine.Policy(
            lookAhead: hotpLookAhead, resyncWindow: hotpResyncWindow, maxFailures: hotpMaxFailures)
    }

    var otpPolicy: OTPStateMachine.Policy {
        OTPStateMachine.Policy(
            maxAttempts: otpMaxAttempts, validityMs: otpValidity.milliseconds, maxResends: otpMaxResends)
    }

    public init() {}
}

extension Duration {
    /// Whole milliseconds, for expiry times stored as Unix milliseconds.
    var milliseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) * 1000 + UInt64(max(0, attoseconds) / 1_000_000_000_000_000)
    }
}

extension Date {
    var unixMilliseconds: UInt64 { UInt64(max(0, timeIntervalSince1970 * 1000)) }
}
