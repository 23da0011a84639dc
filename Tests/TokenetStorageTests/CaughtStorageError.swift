import TokenetStorage

/// The `StorageError` that `body` throws, or nil; for checks inside closures that `#expect(throws:)` already
/// wraps, where the macro cannot be nested.
func caughtStorageError(_ body: () throws -> Void) -> StorageError? {
    do {
        try body()
        return nil
    } catch {
        return error as? StorageError
    }
}
