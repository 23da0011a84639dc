import TokenetNode

/// The issuer's settings that `issuer-policy.json` in its data directory can change, like the TSP's
/// `tsp-policy.json`; without the file the defaults apply.
public struct IssuerPolicy: Sendable, Equatable {
    public static let fileName = "issuer-policy.json"

    /// The keys the file may hold, each optional: `app_authn_retention_s`, how long the issuer app keeps an
    /// authentication request once it was answered or expired, and the issuer an enrolment once its activation code
    /// expired (a week by default); `outbox_retention_s`, how long the issuer's outbox keeps a message (a one-time
    /// code, an activation code) once it was sent and its code expired (a week by default; a message whose code
    /// expiry is unknown is taken to expire a week after it was sent). Each is 1 s to 366 days.
    static let fileKeys: Set<String> = ["app_authn_retention_s", "outbox_retention_s"]

    public var appAuthnRetention = IssuerRetention()
    public var outboxRetention = IssuerRetention()

    public init() {}

    /// The defaults changed by `<dataDirectory>/issuer-policy.json` when it exists. Unknown keys, wrong types and a
    /// key given twice are configuration errors, so a typo never silently falls back to a default.
    public static func load(dataDirectory: String) throws(NodeError) -> IssuerPolicy {
        var policy = IssuerPolicy()
        guard let file = try PolicyFile.read(fileName, dataDirectory: dataDirectory, keys: fileKeys) else {
            return policy
        }
        if let seconds = try file.number("app_authn_retention_s", in: 1...(366 * 86_400), unit: "seconds") {
            policy.appAuthnRetention = IssuerRetention(keep: .seconds(seconds))
        }
        if let seconds = try file.number("outbox_retention_s", in: 1...(366 * 86_400), unit: "seconds") {
            policy.outboxRetention = IssuerRetention(keep: .seconds(seconds))
        }
        return policy
    }
}
