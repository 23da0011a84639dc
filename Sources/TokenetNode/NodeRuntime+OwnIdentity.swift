import TokenetTransport

extension NodeRuntime {
    /// Loads the node's TLS files and checks its certificate as its peers will, before anything is bound.
    ///
    /// Files that OpenSSL cannot use (not PEM, a key that does not match the certificate) are configuration
    /// mistakes like a missing file, so they exit with status 2 rather than as a failure to serve. A certificate
    /// of another role is refused too: a tsp-node started with the issuer's certificate would otherwise serve as
    /// "the issuer" to everyone it calls, and a second node holding the wallet's identity takes over that wallet's
    /// notification stream at the TSP.
    static func checkOwnIdentity(_ options: NodeOptions, spec: NodeSpec) throws(NodeError) {
        guard !options.plaintext, let certificate = options.certificatePath, let key = options.privateKeyPath,
            let ca = options.caPath
        else { return }
        let identity: PeerIdentity
        do {
            let context = try TLSContext(
                configuration: .server(certificateChainFile: certificate, privateKeyFile: key, trustedCAFile: ca),
                keyLogFile: nil)
            identity = try context.checkOwnCertificate()
        } catch let error where [.configuration, .peerIdentity].contains(error.code) && error.details.isEmpty {
            // A file OpenSSL found unusable as it loads, or a certificate out of its dates or without an identity:
            // named by its flag, as `checkTLSFiles` names a file it found unusable.
            let files: [(flag: String, path: String, kind: TLSFileKind)] = [
                ("--cert", certificate, .certificate), ("--key", key, .privateKey), ("--ca", ca, .caCertificates),
            ]
            let named = files.first { file in
                ["\(file.kind.name) file \(file.path) ", "\(file.kind.name) \(file.path) "].contains {
                    error.message.hasPrefix($0)
                }
            }
            throw NodeError(.config, "\(named?.flag ?? "--cert, --key, --ca"): \(error.message)")
        } catch {
            throw NodeError(.config, "--cert, --key, --ca: this node's TLS identity is unusable", cause: error)
        }
        guard let role = NodeRole.allCases.first(where: { $0.nodeName == spec.name }) else { return }
        guard identity.role.rawValue == role.rawValue else {
            throw NodeError(
                .config,
                "--cert: \(certificate) names \(identity), but \(spec.name) needs a certificate for "
                    + "tokenet://\(role.rawValue)/ID")
        }
    }
}
