/// A raw symmetric key in a file of its own (an access-token signing key, for example): created with 0600
/// permissions on first use, refused when other users can read it.
public enum SecretKeyFile {
    /// The key in `path`, creating `size` random bytes there when the file does not exist.
    public static func loadOrCreate(path: String, size: Int = 32) throws(CardError) -> [UInt8] {
        let fresh = try SecureRandom.bytes(size)
        if try SecretFile.createExclusive(fresh, at: path) {
            // Refused at the first start too, not only at the next: others could replace a key just made there.
            if let problem = SecretFile.exposure(of: path, what: "the key file") {
                throw CardError(.invalidKey, problem)
            }
            return fresh
        }
        let (bytes, _) = try SecretFile.read(path)
        if let problem = SecretFile.exposure(of: path, what: "the key file") {
            throw CardError(.invalidKey, problem)
        }
        guard bytes.count == size else {
            throw CardError(.invalidKey, "the key file \(path) holds \(bytes.count) bytes; it must hold \(size)")
        }
        return bytes
    }
}
