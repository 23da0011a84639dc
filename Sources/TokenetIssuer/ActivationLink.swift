import Foundation

/// The link in the activation message, `otp://p?u=SERVER_URL&n=USER&c=CODE&r=REFERENCE`: what the issuer app opens
/// when the user taps it. The backend writes it and the app reads it, so both directions live here. It carries the
/// reference id beside the code: the TSP finds an activation by its reference, and a link without one could not be
/// used at all.
public struct ActivationLink: Sendable, Equatable {
    public var serverURL: String
    public var userID: String
    public var code: String
    public var referenceID: String

    public init(serverURL: String, userID: String, code: String, referenceID: String) {
        self.serverURL = serverURL
        self.userID = userID
        self.code = code
        self.referenceID = referenceID
    }

    /// RFC 3986 unreserved characters stay; everything else (":", "/", "&", "=") is percent-encoded.
    public var text: String {
        let unreserved = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        func encoded(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
        }
        return "otp://p?u=\(encoded(serverURL))&n=\(encoded(userID))&c=\(encoded(code))&r=\(encoded(referenceID))"
    }

    /// Reads a link as the app does; anything else is INVALID_ARGUMENT naming what is wrong with it.
    public init(parsing text: String) throws(IssuerError) {
        var trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        // The message ends its sentence after the link: a full stop copied with it made the reference unknown. No
        // value of a link ends so (the reference is base64url, the code letters and digits).
        while let last = trimmed.last, ".,;)".contains(last) { trimmed.removeLast() }
        guard let components = URLComponents(string: trimmed), components.scheme?.lowercased() == "otp",
            components.host == "p"
        else {
            throw IssuerError(
                .invalidArgument, "not an activation link: it starts otp://p? (copy it whole from the message)")
        }
        var values: [String: String] = [:]
        // Read as sent: decoded by URLComponents, a value whose %-escapes are not UTF-8 came out empty, and the link
        // was said to have no code though its c= was there.
        for item in components.percentEncodedQueryItems ?? [] {
            guard ["u", "n", "c", "r"].contains(item.name) else { continue }
            guard values[item.name] == nil else {
                throw IssuerError(.invalidArgument, "the activation link has \(item.name)= twice")
            }
            guard let value = (item.value ?? "").removingPercentEncoding else {
                throw IssuerError(
                    .invalidArgument,
                    "the activation link's \(item.name)= is not text (its %-escapes are not UTF-8); copy the link "
                        + "whole from the message")
            }
            values[item.name] = value
        }
        guard let code = values["c"], !code.isEmpty else {
            throw IssuerError(.invalidArgument, "the activation link has no code (c=); copy it whole from the message")
        }
        guard let reference = values["r"], !reference.isEmpty else {
            throw IssuerError(
                .invalidArgument,
                "the activation link has no reference id (r=); enter the code and the reference from the message "
                    + "instead")
        }
        self.init(serverURL: values["u"] ?? "", userID: values["n"] ?? "", code: code, referenceID: reference)
    }
}
