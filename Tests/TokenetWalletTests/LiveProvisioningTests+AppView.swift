import Foundation
import Testing

/// The issuer app's view, read with `tokenet issuer app-view`: issuer-node keeps it from the wallet's listener.
extension LiveProvisioningTests {
    /// The app view's row for the token once the app is listening and shows it in `state`. The view changes in the
    /// background when the wallet's event arrives, so this asks again until then (a minute at most).
    func appViewRow(_ digitalCardID: String, state: String) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(60)
        var last = ""
        while Date() < deadline {
            let result = try await tokenet(["issuer", "app-view", issuer.listen, "--json"])
            last = result.stdout + result.stderr
            let view = try json(result)
            let rows = view["cards"] as? [[String: Any]] ?? []
            if view["listening"] as? Bool == true,
                let row = rows.first(where: { $0["digitalCardId"] as? String == digitalCardID }),
                row["tokenState"] as? String == state
            {
                return row
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw LiveTestError("the issuer app never showed \(digitalCardID) as \(state): \(last)")
    }
}
