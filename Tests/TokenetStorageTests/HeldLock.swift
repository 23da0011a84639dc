import Dispatch
import Foundation

@testable import TokenetStorage

/// The write lock of a database file held by another connection, as an operator's `sqlite3` shell or another
/// process holds it: taken on a thread of its own when made, kept until `release()`.
final class HeldLock: Sendable {
    private let released = DispatchSemaphore(value: 0)

    init(on path: String) throws {
        let other = try Database.open(path: path)
        let locked = DispatchSemaphore(value: 0)
        let released = released
        Thread {
            try? other.transaction { _ in
                locked.signal()
                released.wait()
            }
        }.start()
        locked.wait()
    }

    func release() {
        released.signal()
    }
}
