import TokenetRPC
import TokenetWire

/// The issuer app's in-app activation sessions: opened by the wallet, then completed once by the cardholder.
///
/// Pure: the service drives it and does the I/O. A session is `open` until the cardholder acts, `authorizing`
/// while the app signs them in and asks the TSP (a second attempt meanwhile is refused), back to `open` when that
/// failed in a way worth retrying (wrong PIN, TSP unreachable), and `finished` once the wallet has its answer.
/// Kept in memory like an app's screen: a restarted issuer app forgets them, and the wallet opens it again. Each
/// opening and each attempt forgets the sessions nobody can use any more (`keeps`), so the table holds no more than
/// the sessions of the last lifetime or two, however many were opened.
struct AppToAppSessions: Sendable {
    enum Status: Sendable, Equatable {
        case open
        case authorizing
        case finished(WalletV1.BankingAppActivationResult)
    }

    struct Session: Sendable, Equatable {
        var id: String
        var caller: AppToAppCaller
        var digitalCardID: String
        var cardID: String
        var cardLast4: String
        /// The issuer's id for the cardholder, whom the app signs in.
        var cardholderID: String
        var expiresAtMs: UInt64
        /// The wallet node that opened the app (from its certificate; nil over plaintext): the one told the outcome.
        var walletNodeID: String? = nil
        var status: Status = .open
    }

    /// What an attempt to complete a session may do.
    enum Start: Sendable, Equatable {
        case proceed(Session)
        case refused(StatusCode, String)
    }

    static let lifetimeMs: UInt64 = 10 * 60 * 1000

    private(set) var sessions: [String: Session] = [:]

    /// Whether the table still needs a session at `nowMs`: an open or finished one until it expires (a finished one
    /// is kept to say so to a second attempt), one being completed until a lifetime after that — a completion whose
    /// call never came back (cancelled, or failed in a way that did not reopen it) is not kept for ever.
    static func keeps(_ session: Session, nowMs: UInt64) -> Bool {
        session.status == .authorizing ? session.expiresAtMs + lifetimeMs > nowMs : session.expiresAtMs > nowMs
    }

    /// Forgets the sessions the table no longer needs.
    mutating func sweep(nowMs: UInt64) {
        sessions = sessions.filter { Self.keeps($0.value, nowMs: nowMs) }
    }

    /// Adds a session, forgetting those the table no longer needs.
    mutating func open(_ session: Session, nowMs: UInt64) {
        sweep(nowMs: nowMs)
        sessions[session.id] = session
    }

    /// Moves an open, current session to `authorizing`, forgetting those the table no longer needs.
    mutating func begin(_ id: String, nowMs: UInt64) -> Start {
        defer { sweep(nowMs: nowMs) }
        guard var session = sessions[id] else {
            return .refused(.notFound, "no app-to-app session \"\(id)\"; open the issuer app from the wallet again")
        }
        switch session.status {
        case .authorizing:
            return .refused(.failedPrecondition, "session \"\(id)\" is already being completed")
        case .finished(let result):
            // An approved session left its token ACTIVE (activated by it, or ACTIVE already): opening the app again,
            // the advice for the others, has nothing left to do.
            let next =
                result == .approved
                ? "its token is ACTIVE, so there is nothing left to do"
                : "open the issuer app from the wallet again"
            return .refused(
                .failedPrecondition,
                "session \"\(id)\" is already finished (\(result.protoValueName ?? "?")); \(next)")
        case .open:
            guard session.expiresAtMs > nowMs else {
                return .refused(
                    .failedPrecondition, "session \"\(id)\" has expired; open the issuer app from the wallet again")
            }
            session.status = .authorizing
            sessions[id] = session
            return .proceed(session)
        }
    }

    /// An attempt that can be retried: the session is open again.
    mutating func reopen(_ id: String) {
        if sessions[id]?.status == .authorizing { sessions[id]?.status = .open }
    }

    mutating func finish(_ id: String, _ result: WalletV1.BankingAppActivationResult) {
        sessions[id]?.status = .finished(result)
    }
}
