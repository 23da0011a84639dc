import Foundation
import Synchronization

/// Wrong security codes (CVC) and expiry dates presented for each of the issuer's cards, so that a card number cannot
/// be completed into a card by trying every expiry and code through eligibility checks: the answer names a wrong
/// one, and the TSP passes it to the wallet, so 1,000 checks found a three-digit code, and 40 an expiry. Past `limit`
/// wrong ones within `window`, the card's eligibility and digitization are refused, whatever comes, until the window
/// has passed since the last wrong one. A right code forgets the count, as a card's own issuer does.
///
/// Kept in memory: a restart of the issuer node clears the counts (a sandbox's operator may want that), and an
/// attacker cannot restart it.
final class SecurityCodeAttempts: Sendable {
    static let limit = 5
    static let window: TimeInterval = 24 * 3600

    private let failures = Mutex<[String: [Date]]>([:])

    /// Until when `cardID` is refused (its last wrong code plus the window), or nil when it is not.
    func lockedUntil(_ cardID: String, asOf now: Date) -> Date? {
        failures.withLock { failures in
            let recent = (failures[cardID] ?? []).filter { now.timeIntervalSince($0) < Self.window }
            failures[cardID] = recent.isEmpty ? nil : recent
            guard recent.count >= Self.limit, let last = recent.last else { return nil }
            return last.addingTimeInterval(Self.window)
        }
    }

    /// Counts a wrong code for `cardID`, or forgets its count after a right one.
    func record(_ cardID: String, wrong: Bool, at now: Date) {
        failures.withLock { failures in
            if wrong { failures[cardID, default: []].append(now) } else { failures[cardID] = nil }
        }
    }
}
