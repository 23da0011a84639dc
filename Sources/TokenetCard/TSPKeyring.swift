import Synchronization

/// The token service provider's JWE decryption keys: one current key that senders encrypt to, plus retired keys
/// kept so that card data encrypted just before a rotation still decrypts.
///
/// `rotate()` makes a new current key and retires the old one; `forget(kid:)` drops a retired key once senders
/// have picked up the new published key. Safe to share between tasks.
public final class TSPKeyring: Sendable {
    /// A public key as published to wallets and issuers.
    public struct PublishedKey: Sendable, Equatable {
        public let kid: String
        /// `-----BEGIN PUBLIC KEY-----` PEM.
        public let pem: String
        /// True for the key senders should encrypt to.
        public let isCurrent: Bool
    }

    private struct State {
        var current: RSAPrivateKey
        /// Oldest first.
        var retired: [RSAPrivateKey]
    }

    private let state: Mutex<State>

    /// A retired key that is the current one, or one given twice, is kept once: a rotation interrupted after it
    /// saved the current key as retired leaves such copies on disk.
    public init(current: RSAPrivateKey, retired: [RSAPrivateKey] = []) {
        var seen: Set<String> = [current.kid]
        state = Mutex(State(current: current, retired: retired.filter { seen.insert($0.kid).inserted }))
    }

    /// A keyring with one newly generated 2048-bit key.
    public static func generate() throws(CardError) -> TSPKeyring {
        TSPKeyring(current: try RSAPrivateKey.generate())
    }

    public var current: RSAPrivateKey { state.withLock { $0.current } }

    public var currentKid: String { current.kid }

    /// Retired key ids, oldest first.
    public var retiredKids: [String] { state.withLock { $0.retired.map(\.kid) } }

    /// The private key with this kid, current or retired.
    public func key(for kid: String) -> RSAPrivateKey? {
        state.withLock { state in
            if state.current.kid == kid { return state.current }
            return state.retired.first { $0.kid == kid }
        }
    }

    /// Generates a new current key and retires the previous one; returns the new key.
    @discardableResult
    public func rotate() throws(CardError) -> RSAPrivateKey {
        let next = try RSAPrivateKey.generate()
        rotate(to: next)
        return next
    }

    /// Makes `next` the current key and retires the previous one (a no-op when `next` is already current).
    public func rotate(to next: RSAPrivateKey) {
        state.withLock { state in
            guard state.current.kid != next.kid else { return }
            state.retired.removeAll { $0.kid == next.kid }
            state.retired.append(state.current)
            state.current = next
        }
    }

    /// Drops a retired key; returns false when no retired key has this kid. The current key cannot be forgotten.
    @discardableResult
    public func forget(kid: String) -> Bool {
        state.withLock { state in
            let before = state.retired.count
            state.retired.removeAll { $0.kid == kid }
            return state.retired.count != before
        }
    }

    /// The public keys to publish: the current key first, then retired keys still accepted for decryption.
    public func publishedKeys() throws(CardError) -> [PublishedKey] {
        let (current, retired) = state.withLock { ($0.current, $0.retired) }
        var keys = [PublishedKey(kid: current.kid, pem: try current.publicKey.pem(), isCurrent: true)]
        for key in retired.reversed() {
            keys.append(PublishedKey(kid: key.kid, pem: try key.publicKey.pem(), isCurrent: false))
        }
        return keys
    }
}
