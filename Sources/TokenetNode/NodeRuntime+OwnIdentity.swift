import Foundation
import TokenetTransport

extension NodeRuntime {
    /// Loads the node's TLS files and checks its certificate as its peers will, before anything is bound.
    ///
    /// Files that OpenSSL cannot use (not PEM, a key that does not match the certificate) are configuration
    /// mistakes like a missing file, so they exit with status 2 rather than as a failure to serve. A certificate
    /// of another role is refused too: a tsp-node started with the issuer's certificate would otherwise serve as
    /// "the issuer" to everyone it calls, and a second node holding the wallet's identity takes over that wallet's
    /// notification stream at the TSP.
    ///
    /// Returns when the certificate expires, for `start` to warn of one that expires soon.
    @discardableResult
    static func checkOwnIdentity(_ options: NodeOptions, spec: NodeSpec) throws(NodeError) -> Date? {
        guard !options.plaintext, let certificate = options.certificatePath, let key = options.privateKeyPath,
            let ca = options.caPath
        else { return nil }
        let identity: PeerIdentity
        let expiry: Date?
        let chainProblem: (reason: String, wrongPurpose: Bool)?
        let clientProblem: String?
        do {
            let context = try TLSContext(
                configuration: .server(certificateChainFile: certificate, privateKeyFile: key, trustedCAFile: ca),
                keyLogFile: nil)
            identity = try context.checkOwnCertificate()
            expiry = context.ownCertificateExpiry
            chainProblem = context.ownCertificateChainProblem(forServing: true)
            clientProblem = context.ownCertificateClientProblem()
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
        if let chainProblem { throw NodeError(.config, chainMessage(chainProblem, certificate: certificate, ca: ca)) }
        // Every node also calls a peer (the wallet and the issuer the TSP, the TSP each issuer): without clientAuth
        // it said READY and then every call it made was refused.
        if let clientProblem {
            throw NodeError(
                .config,
                "--cert: \(certificate) is not made for TLS clients (\(clientProblem); its extended key usage lacks "
                    + "clientAuth), and this node calls its peers as one, which would refuse it; make the node's "
                    + "certificate with Tools/gen-certs")
        }
        guard let role = NodeRole.allCases.first(where: { $0.nodeName == spec.name }) else { return expiry }
        guard identity.role.rawValue == role.rawValue else {
            throw NodeError(
                .config,
                "--cert: \(certificate) names \(identity), but \(spec.name) needs a certificate for "
                    + "tokenet://\(role.rawValue)/ID")
        }
        return expiry
    }

    /// Why peers would refuse the node's certificate, and what to do about it.
    static func chainMessage(_ problem: (reason: String, wrongPurpose: Bool), certificate: String, ca: String)
        -> String
    {
        if problem.wrongPurpose {
            return "--cert: \(certificate) is not made for serving TLS (\(problem.reason); its extended key usage "
                + "lacks serverAuth), so every peer that connects would refuse it; make the node's certificate with "
                + "Tools/gen-certs"
        }
        return "--cert: \(certificate) does not verify against --ca \(ca) (\(problem.reason)): peers that trust "
            + "that CA would refuse this node, and it would refuse them. Give the node the certificate, key and CA "
            + "of one Tools/gen-certs directory (--ca is the CA's certificate, ca.pem, not a node's)"
    }

    /// Watches the certificate of a node that runs on: it warns once the certificate comes within `expiryWarning` of
    /// its end (a node started before that said nothing), and logs an error when it ends. Past that moment every
    /// peer refuses new connections to or from the node, and its log showed only handshake failures.
    static func watchExpiry(_ expiry: Date?, certificate: String?, logger: Logger) -> Task<Void, Never>? {
        guard let expiry else { return nil }
        return Task.detached {
            /// Sleeps until `moment` (in steps of at most a day, so that the wall clock's changes are followed);
            /// false when the node stopped first.
            func sleep(until moment: Date) async -> Bool {
                while true {
                    let left = moment.timeIntervalSinceNow
                    guard left > 0 else { return true }
                    guard (try? await Task.sleep(for: .seconds(min(left, 86_400)))) != nil else { return false }
                }
            }
            let warnAt = expiry.addingTimeInterval(-expiryWarning)
            if warnAt > Date() {
                guard await sleep(until: warnAt) else { return }
                if let warning = expiryWarning(expiry, certificate: certificate) { logger.warning(warning) }
            }
            guard await sleep(until: expiry) else { return }
            logger.error(
                "this node's certificate \(certificate ?? "") has expired: its peers refuse every new connection to "
                    + "or from it (connections open now go on); make a new one with Tools/gen-certs and restart the "
                    + "node")
        }
    }

    /// How long before its certificate expires a node warns at start.
    static let expiryWarning: TimeInterval = 7 * 86_400

    /// A warning for a certificate that expires within `expiryWarning`: past that moment every peer refuses the
    /// node's handshakes, and the node's own log showed nothing but refusals naming the peers.
    static func expiryWarning(_ expiry: Date?, certificate: String?, now: Date = Date()) -> String? {
        guard let expiry, expiry.timeIntervalSince(now) < expiryWarning else { return nil }
        let left = expiry.timeIntervalSince(now)
        // To the nearest unit (the exact moment follows): rounded down, 7 days less 30 s read "6 day(s)".
        let when =
            left < 3_600
            ? "in \(max(1, Int((left / 60).rounded()))) minute(s)"
            : left < 86_400
                ? "in \(Int((left / 3_600).rounded())) hour(s)"
                : "in \(Int((left / 86_400).rounded())) day(s)"
        return "this node's certificate \(certificate ?? "") expires \(when), on "
            + "\(expiry.formatted(Date.ISO8601FormatStyle())): from then on its peers refuse it; make a new one with "
            + "Tools/gen-certs and restart the node"
    }
}
