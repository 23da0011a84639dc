import Testing

@testable import TokenetTSP

/// Two nodes with one identity replace each other's notification stream over and over: the third replacement
/// within a minute warns, once a minute; a lone reconnect, or replacements spread out, do not.
@Suite struct SubscriberContentionTests {
    @Test func theThirdReplacementWithinAMinuteWarnsOnceAMinute() {
        var contention = SubscriberContention()
        let actions = [0, 2_000, 4_000, 6_000, 30_000, 64_001].map {
            contention.replaced("wallet/wallet-1", atMs: 1_000_000 + UInt64($0))
        }
        #expect(
            actions == [
                .none, .none, .warn(subscriber: "wallet/wallet-1", count: 3), .none, .none,
                .warn(subscriber: "wallet/wallet-1", count: 3),
            ])
    }

    @Test func aLoneReconnectOrSpreadOutOnesDoNotWarn() {
        var contention = SubscriberContention()
        let actions = [0, 40_000, 80_000, 120_000].map { contention.replaced("wallet/wallet-1", atMs: UInt64($0)) }
        #expect(actions == [.none, .none, .none, .none])
    }

    @Test func eachSubscriberIsCountedOnItsOwn() {
        var contention = SubscriberContention()
        var actions: [SubscriberContention.Action] = []
        for (index, subscriber) in ["wallet/a", "wallet/b", "wallet/a", "issuer/i", "wallet/b", "wallet/a"].enumerated()
        {
            actions.append(contention.replaced(subscriber, atMs: UInt64(index) * 1_000))
        }
        #expect(actions == [.none, .none, .none, .none, .none, .warn(subscriber: "wallet/a", count: 3)])
    }
}
