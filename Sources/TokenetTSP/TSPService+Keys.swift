import Foundation
import TokenetCard
import TokenetWire

/// The TSP's card-data keys as its services publish and change them (`ProvisioningService`, `ControlService+Keys`).
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
        try await keyChanges.one("card-data keys", cancelled: CancellationError(), body)
    }

    /// A key file the TSP could not write, delete or list: RESOURCE_EXHAUSTED for a full disk, as the TSP's other
    /// writes say it, otherwise UNAVAILABLE with where to look. The keys on disk and in use are as they were: each
    /// file is replaced by a rename, and a rotation that fails takes back what it wrote.
    func keyFileFailure(_ what: String, _ error: any Error) -> TSPError {
        if let error = error as? CardError, error.code != .io { return TSPError.internal(what, error) }
        let reason = (error as? CardError)?.message ?? error.localizedDescription
        let directory = TSPKeyFiles.directory(in: dataDirectory)
        // The reason is in the message; as the cause too, the log line said it twice.
        if reason.contains("errno \(ENOSPC)") || (error as? CocoaError)?.code == .fileWriteOutOfSpace {
            return TSPError(
                .diskFull,
                "the TSP could not save its key files while \(what): its disk is full (\(reason)); free space on the "
                    + "disk that holds \(directory), then try again")
        }
        return TSPError(
            .storageUnavailable,
            "the TSP could not write or delete its key files while \(what) (\(reason)); check the disk and the mode, "
                + "owner and attributes (lsattr) of \(directory), then try again")
    }
}
