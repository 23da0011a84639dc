import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `TspControl.RotateEncryptionKey` and `ForgetEncryptionKey`: the operator changes the card-data keys the TSP
/// publishes (`Provisioning.GetEncryptionKeys`) and decrypts with, to see how wallets and issuers follow.
extension ControlService {
    func rotateEncryptionKey(_ request: TspV1.RotateEncryptionKeyRequest, context: ServerContext) async throws
        -> TspV1.RotateEncryptionKeyResponse
    {
        try await tsp.handling("RotateEncryptionKey", context) { log in
            try await tsp.changingKeys {
                let (current, retired): (RSAPrivateKey, RSAPrivateKey)
                do {
                    (current, retired) = try TSPKeyFiles.rotate(
                        tsp.keyring, dataDirectory: tsp.dataDirectory, nowMs: tsp.nowMs)
                } catch {
                    throw tsp.keyFileFailure("rotating the card-data key", error)
                }
                log.info("card-data key rotated", ["current_kid": current.kid, "retired_kid": retired.kid])
                return TspV1.RotateEncryptionKeyResponse(
                    keys: try tsp.publishedKeys(), retiredKeyIdentifier: retired.kid)
            }
        }
    }

    func forgetEncryptionKey(_ request: TspV1.ForgetEncryptionKeyRequest, context: ServerContext) async throws
        -> TspV1.ForgetEncryptionKeyResponse
    {
        try await tsp.handling("ForgetEncryptionKey", context) { log in
            let kid = request.publicKeyIdentifier
            guard !kid.isEmpty else {
                throw TSPError(
                    .invalidArgument,
                    "public_key_identifier is required: the retired key's identifier, as GetEncryptionKeys lists it")
            }
            return try await tsp.changingKeys {
                let outcome: TSPKeyFiles.Forgetting
                do {
                    outcome = try TSPKeyFiles.forget(kid: kid, in: tsp.keyring, dataDirectory: tsp.dataDirectory)
                } catch {
                    throw tsp.keyFileFailure("forgetting a card-data key", error)
                }
                switch outcome {
                case .current:
                    throw TSPError(
                        .failedPrecondition,
                        "\(TSPService.shownKeyID(kid)) is the current card-data key, which wallets and issuers "
                            + "encrypt to: rotate the key first (RotateEncryptionKey), then forget this one once they "
                            + "have picked up the new one")
                case .unknown:
                    throw TSPError(
                        .notFound,
                        "the TSP holds no card-data key \(TSPService.shownKeyID(kid)); "
                            + Self.retiredKeysText(newestFirst: tsp.keyring.retiredKids.reversed()))
                case .noFile:
                    throw TSPError(
                        .failedPrecondition,
                        "no file in \(TSPKeyFiles.directory(in: tsp.dataDirectory)) holds the retired key "
                            + "\(TSPService.shownKeyID(kid)) any more (its file was replaced or removed since the TSP "
                            + "started), so nothing was deleted and the key still decrypts until the TSP restarts")
                case .forgotten:
                    log.info("card-data key forgotten", ["kid": kid])
                    return TspV1.ForgetEncryptionKeyResponse(keys: try tsp.publishedKeys())
                }
            }
        }
    }
}

extension ControlService {
    /// The retired keys for a NOT_FOUND answer, newest first as `GetEncryptionKeys` lists them, and the first few
    /// only: the newest are the likeliest to be meant, and a long list was cut at its end.
    static func retiredKeysText(newestFirst kids: [String]) -> String {
        guard !kids.isEmpty else { return "it has no retired key, only the current one" }
        let shown = kids.prefix(5).joined(separator: ", ")
        return "its retired keys, newest first: " + shown
            + (kids.count > 5 ? " and \(kids.count - 5) more (tokenet tsp keys lists them)" : "")
    }
}
