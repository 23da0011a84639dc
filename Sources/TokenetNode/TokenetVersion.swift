/// Version strings shared by every Tokenet executable so `--version` answers agree.
public enum TokenetVersion {
    /// The release of this source tree.
    public static let release = "0.1.0-dev"
    /// The wire protocol version the nodes speak (Protos/tokenet/wire/v1).
    public static let wireProtocol = 1

    /// The line printed by `--version`, for example `tsp-node 0.1.0-dev (wire protocol 1)`.
    public static func line(for program: String) -> String {
        "\(program) \(release) (wire protocol \(wireProtocol))"
    }
}
