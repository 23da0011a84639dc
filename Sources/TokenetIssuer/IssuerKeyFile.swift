import Foundation
import TokenetCard

/// The issuer's RSA key pair: the TSP encrypts card data to its public half. Kept as PEM in the data directory,
/// created with 0600 permissions on first start and refused later if other users can read it.
enum IssuerKeyFile {
    static let fileName = "issuer-key.pem"

    static func loadOrCreate(directory: String) throws(IssuerError) -> RSAPrivateKey {
        let path = (directory as NSString).appendingPathComponent(fileName)
        if FileManager.default.fileExists(atPath: path) {
            if let problem = SecretFile.exposure(of: path, what: "the issuer key") {
                throw IssuerError(.keys, problem, cause: ExposedKeyFile())
            }
            do {
                return try RSAPrivateKey(contentsOfFile: path)
            } catch {
                throw IssuerError(.keys, "cannot load the issuer key \(path)", cause: error)
            }
        }
        let key: RSAPrivateKey
        do {
            key = try RSAPrivateKey.generate()
            try key.write(toFile: path)
        } catch {
            throw IssuerError(.keys, "cannot create the issuer key \(path)", cause: error)
        }
        // Refused at the first start too, not only at the next: others could replace a key just made there.
        if let problem = SecretFile.exposure(of: path, what: "the issuer key") {
            throw IssuerError(.keys, problem, cause: ExposedKeyFile())
        }
        return key
    }
}

/// The cause of a key file refused for its permissions: the operator's to fix before a restart can help (status 2),
/// as the vault key's and the TLS key's are.
struct ExposedKeyFile: Error {}
