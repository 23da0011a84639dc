extension Transaction {
    /// The check value a party's database keeps for its vault key (the one row of `vault_key_check`), or nil when it
    /// has none yet. A value of another type comes back as its bytes (text) or as none (anything else), for the key
    /// check to report as a damaged check value rather than fail on the type.
    public func storedVaultKeyCheck() throws -> [UInt8]? {
        try queryOne("SELECT sealed FROM vault_key_check WHERE singleton = 1").map { row in
            switch try row.value(0) {
            case .blob(let bytes): bytes
            case .text(let text): Array(text.utf8)
            default: [UInt8]()
            }
        }
    }
}
