import TokenetCard
import TokenetRPC
import TokenetWire

extension CardV1.EncryptedCardData {
    /// `card` as a wallet sends it to the TSP: a JWE to the TSP's current key, which is asked of the TSP (its keys
    /// change with each sandbox). `tokenet tsp encrypt-card` and a scenario's `encrypt` make it this way.
    static func forTSP(_ card: CardData, client: any RPCCaller, options: CallOptions) async throws
        -> CardV1.EncryptedCardData
    {
        let keys = try await TspV1.Provisioning.Client(client).getEncryptionKeys(.init(), options: options).keys
        guard let current = keys.first(where: \.current) else {
            throw RPCError(.failedPrecondition, "the TSP published no current encryption key")
        }
        let jwe: String
        do throws(CardError) {
            jwe = try JWE.encrypt(
                card, to: try RSAPublicKey(pem: current.publicKeyPem), kid: current.publicKeyIdentifier)
        } catch {
            throw RPCError(.internal, "the TSP's current key cannot encrypt: \(error.message)")
        }
        return CardV1.EncryptedCardData(jwe: jwe, publicKeyIdentifier: current.publicKeyIdentifier)
    }
}
