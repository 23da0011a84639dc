/// Activation codes as people type them: compared without case, spaces or dashes. The TSP digests a code in this
/// form, and the issuer app compares the code typed with the one in a link the same way.
public enum ActivationCode {
    public static func normalized(_ code: String) -> String {
        String(code.uppercased().filter { $0 != " " && $0 != "-" })
    }
}
