import Foundation
import TokenetNode

/// The issuer's settings that `issuer-policy.json` in its data directory can change, like the TSP's
/// `tsp-policy.json`; without the file the defaults apply.
public struct IssuerPolicy: Sendable, Equatable {
    public static let fileName = "issuer-policy.json"

    /// The keys the file may hold, each optional: `app_authn_retention_s`, how long the issuer app keeps an
    /// authentication request once it was answered or expired, and the issuer an enrolment once its activation code
    /// expired (a week by default).
    static let fileKeys: Set<String> = ["app_authn_retention_s"]

    public var appAuthnRetention = AppAuthnRetention()

    public init() {}

    /// The defaults changed by `<dataDirectory>/issuer-policy.json` when it exists. Unknown keys, wrong types and a
    /// key given twice are configuration errors, so a typo never silently falls back to a default.
    public static func load(dataDirectory: String) throws(NodeError) -> IssuerPolicy {
        let path = (dataDirectory as NSString).appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: path) else { return IssuerPolicy() }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw NodeError(.config, "cannot read \(path)", cause: DescribedError(error))
        }
        let object: [String: Scalar]
        do {
            object = try JSONDecoder().decode([String: Scalar].self, from: data)
        } catch {
            throw NodeError(
                .config, "\(path) must hold one JSON object of policy settings",
                cause: DescribedError(decoding: error, of: data))
        }
        if let problem = StrictJSON.problem(in: data) { throw NodeError(.config, "\(path): \(problem)") }
        if let unknown = object.keys.sorted().first(where: { !fileKeys.contains($0) }) {
            let known = fileKeys.sorted().joined(separator: ", ")
            throw NodeError(.config, "\(path): unknown key \"\(unknown)\" (known: \(known))")
        }
        var policy = IssuerPolicy()
        if let value = object["app_authn_retention_s"] {
            let range = 1...(366 * 86_400)
            guard case .integer(let seconds) = value, range.contains(seconds) else {
                throw NodeError(
                    .config,
                    "\(path): \"app_authn_retention_s\" must be a whole number of seconds from \(range.lowerBound) "
                        + "to \(range.upperBound)")
            }
            policy.appAuthnRetention = AppAuthnRetention(keep: .seconds(seconds))
        }
        return policy
    }
}

/// A policy value: JSON integers and booleans are kept apart (a 1 is not `true`).
private enum Scalar: Decodable {
    case bool(Bool)
    case integer(Int)
    case other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Int.self) {
            self = .integer(number)
        } else {
            self = .other
        }
    }
}
