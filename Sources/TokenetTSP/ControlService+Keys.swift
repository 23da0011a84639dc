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
                    let retired = tsp.keyring.retiredKids
                    throw TSPError(
                        .notFound,
                        "the TSP holds no card-data key \(TSPService.shownKeyID(kid)); "
                            + (retired.isEmpty
                                ? "it has no retired key, only the current one"
                                : "its retired keys are " + retired.joined(separator: ", ")))
                case .forgotten:
                    log.info("card-data key forgotten", ["kid": kid])
                    return TspV1.ForgetEncryptionKeyResponse(keys: try tsp.publishedKeys())
                }
            }
        }
    }
}

extension TSPService {
    /// The keys as `GetEncryptionKeys` publishes them: the current key first, then the retired ones, newest first.
    func publishedKeys() throws -> [TspV1.EncryptionKey] {
        do {
            return try keyring.publishedKeys().map {
                TspV1.EncryptionKey(publicKeyIdentifier: $0.kid, publicKeyPem: $0.pem, current: $0.isCurrent)
            }
        } catch {
            throw TSPError.internal("publishing its encryption keys", error)
        }
    }

    /// Runs a key change once no other is running.
    func changingKeys<T>(_ body: () async throws -> T) async throws -> T {
        try await keyChanges.one(
            "card-data keys", cancelled: CancellationError(), body)
    }

    /// A key file the TSP could not write or delete: UNAVAILABLE with where to look (the keys on disk and in use are
    /// as they were, or the rotation is whole: each file is replaced by a rename).
    func keyFileFailure(_ what: String, _ error: any Error) -> TSPError {
        guard let error = error as? CardError, error.code == .io else { return TSPError.internal(what, error) }
        return TSPError(
            .storageUnavailable,
            "the TSP could not write its key files while \(what) (\(error.message)); check the disk and the mode and "
                + "owner of \(TSPKeyFiles.directory(in: dataDirectory)), then try again",
            cause: error)
    }
}
