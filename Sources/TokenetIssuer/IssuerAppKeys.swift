import TokenetCard

/// The issuer app's encryption keys for one user, derived (PBKDF2-HMAC-SHA-256) from the user's PIN and the app's
/// random device PIN, so the credentials stored in the issuer's database open only with the PIN the user types:
/// the user credential under PIN + device PIN, the device credential under the device PIN alone. A stored check
/// value sealed under the user key tells a wrong PIN from a right one without storing the PIN.
struct IssuerAppKeys {
    static let pinCheck = Array("tokenet issuer app pin check".utf8)

    let user: DataVault
    let device: DataVault

    static func derive(pin: String, devicePIN: String, salt: [UInt8], iterations: Int) throws(IssuerError)
        -> IssuerAppKeys
    {
        do {
            let userKey = try PBKDF2.sha256(
                password: Array("user:\(pin):\(devicePIN)".utf8), salt: salt, iterations: iterations, length: 32)
            let deviceKey = try PBKDF2.sha256(
                password: Array("device:\(devicePIN)".utf8), salt: salt, iterations: iterations, length: 32)
            return IssuerAppKeys(user: try DataVault(key: userKey), device: try DataVault(key: deviceKey))
        } catch {
            throw IssuerError(.keys, "cannot derive the app's keys", cause: error)
        }
    }

    func sealPINCheck(userID: String) throws(IssuerError) -> [UInt8] {
        do {
            return try user.seal(Self.pinCheck, associatedData: Array("pin-check:\(userID)".utf8))
        } catch {
            throw IssuerError(.keys, "cannot seal the PIN check", cause: error)
        }
    }

    /// Whether these keys (so the PIN they came from) open the user's PIN check.
    func opensPINCheck(_ sealed: [UInt8], userID: String) -> Bool {
        (try? user.open(sealed, associatedData: Array("pin-check:\(userID)".utf8))) == Self.pinCheck
    }

    /// A random device PIN: 16 decimal digits from the secure generator (bytes from 250 up are drawn again, so
    /// every digit is equally likely).
    static func randomDevicePIN() throws(IssuerError) -> String {
        var pin = ""
        do {
            while pin.count < 16 {
                for byte in try SecureRandom.bytes(16) where byte < 250 && pin.count < 16 {
                    pin.append(Character(String(byte % 10)))
                }
            }
        } catch {
            throw IssuerError(.keys, "cannot generate a device PIN", cause: error)
        }
        return pin
    }
}
