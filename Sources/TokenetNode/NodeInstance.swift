import Foundation

/// The id of this node's installation: made at its first start and kept in its data directory (`node-instance`), so
/// it stays the same across restarts and differs between two nodes that share a certificate. The TSP's broker tells
/// a reconnecting node (same instance: its new stream replaces the old) from a second node on the same identity
/// (another instance: refused while the first holds the stream, since each would take the other's messages).
public enum NodeInstance {
    public static let fileName = "node-instance"

    /// The id in `directory`, made and written (to a temporary file, then renamed) when there is none.
    public static func id(directory: String) throws(NodeError) -> String {
        let path = (directory as NSString).appendingPathComponent(fileName)
        if let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard isValid(text) else {
                throw NodeError(
                    .config,
                    "\(path) does not hold a node instance id (1 to 64 letters, digits, '-' or '_'); delete it and "
                        + "the node makes a new one")
            }
            return text
        }
        var generator = SystemRandomNumberGenerator()
        let id = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let temporary = path + ".tmp"
        do {
            try Data((id + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw NodeError(.io, "cannot write \(temporary)", cause: DescribedError(error))
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: temporary)
            throw NodeError(.io, "cannot write \(path): \(reason)")
        }
        return id
    }

    /// 1 to 64 ASCII letters, digits, '-' or '_'.
    public static func isValid(_ text: some StringProtocol) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }
}
