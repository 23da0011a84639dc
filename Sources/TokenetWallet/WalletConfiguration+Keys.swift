import Foundation
import TokenetNode

extension WalletConfiguration {
    /// The keys `wallet.json` may hold, by object (`""` is the top level).
    static let knownKeys: [(object: String, keys: [String])] = [
        ("", ["walletAccountId", "device", "risk", "provider"]),
        ("device", ["deviceId", "deviceType", "deviceName", "osName", "osVersion"]),
        ("risk", ["accountScore", "deviceScore", "recommendation"]),
    ]

    /// Refuses a key `wallet.json` does not know, as the node's `--config` file and the TSP's policy file do: a typo
    /// (`"providr"`, `"acountScore"`) would otherwise leave the wallet on its default without a word.
    static func checkKeys(_ data: Data, path: String) throws(NodeError) {
        // A document that is not an object is reported by the decoder, with its reason.
        guard let top = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return }
        for (object, keys) in knownKeys {
            guard let members = object.isEmpty ? top : top[object] as? [String: Any] else { continue }
            if let unknown = members.keys.sorted().first(where: { !keys.contains($0) }) {
                let name = object.isEmpty ? unknown : "\(object).\(unknown)"
                throw NodeError(
                    .config, "\(path): unknown key \"\(name)\" (known: \(keys.joined(separator: ", ")))")
            }
        }
    }
}
