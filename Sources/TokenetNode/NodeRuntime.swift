import Foundation
import TokenetTransport

/// A started node: its listener is accepting and readiness has been announced.
///
/// Start and stop are separate from process concerns (arguments, signals, exit codes, see `NodeMain`) so the
/// lifecycle can be driven from tests and, later, host the RPC server behind `NodeListener`.
public final class NodeRuntime: Sendable {
    public let spec: NodeSpec
    public let options: NodeOptions
    public let logger: Logger
    public let listener: any NodeListener
    public let ready: ReadyInfo
    private let dataDirectoryLock: DataDirectoryLock
    /// The ready file this node wrote: only that file is removed at stop, not whatever took its path since.
    private let readyFileWritten: ReadyFile.Written?
    /// `watchExpiry`'s task, ended at stop.
    private let expiryWatch: Task<Void, Never>?

    private init(
        spec: NodeSpec, options: NodeOptions, logger: Logger, listener: any NodeListener, ready: ReadyInfo,
        dataDirectoryLock: DataDirectoryLock, readyFileWritten: ReadyFile.Written?,
        expiryWatch: Task<Void, Never>? = nil
    ) {
        self.expiryWatch = expiryWatch
        self.spec = spec
        self.options = options
        self.logger = logger
        self.listener = listener
        self.ready = ready
        self.dataDirectoryLock = dataDirectoryLock
        self.readyFileWritten = readyFileWritten
    }

    /// Creates the data directory unless it exists. A file where it (or a directory above it) should be is a wrong
    /// `--data-dir`, a configuration mistake (exit status 2) that the message names, not a failing disk; so is a
    /// directory the node may not write (its mode, a read-only mount, `chattr +i`), which otherwise surfaced as
    /// SQLite's "unable to open database file" once the node opened its database there.
    static func makeDataDirectory(_ path: String, isDefault: Bool) throws(NodeError) {
        let named = isDefault ? "the default data directory \(path)" : path
        if let file = DirectoryPath.blockingFile(on: path) {
            let problem = file == path ? "is a file" : "cannot be made: \(file) is a file"
            throw NodeError(
                .config,
                "--data-dir: \(named) \(problem), not a directory; give a directory, or a path where one can be made")
        }
        // A link whose target is gone: creating the directory fails with "File exists", which named nothing.
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path),
            !FileManager.default.fileExists(atPath: path)
        {
            throw NodeError(
                .config,
                "--data-dir: \(named) is a symbolic link to \(target), which does not exist; create that directory, "
                    + "point the link at the data directory, or give another --data-dir")
        }
        do {
            // 0700 whatever the umask: the directory holds the node's database and keys, and one that other users
            // may write lets them replace those files, whatever the files' own modes. One that exists is left as
            // its owner made it.
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            // The place it was asked for is the operator's to fix (a read-only mount, a parent the node may not
            // write): status 2 naming the flag, as for a directory there that is not writable. It was status 1, as a
            // node that fails while running.
            throw NodeError(
                .config,
                "--data-dir: cannot create \(named): check the path (every directory above it must exist or be "
                    + "creatable by this user, on a writable mount) or give another directory",
                cause: DescribedError(error))
        }
        // Root passes mode checks, but not an immutable directory or a read-only file system: access(2) reports
        // those too.
        guard access(path, W_OK | X_OK) == 0 else {
            let reason = String(cString: strerror(errno))
            throw NodeError(
                .config,
                "--data-dir: \(named) is not writable (\(reason)); the node keeps its database, keys and lock there: "
                    + "make it writable (check its mode and owner, `lsattr -d` for the immutable attribute, and the "
                    + "mount) or give another directory")
        }
    }

    /// Checks files, prepares the data directory, binds, and announces readiness through `announce` (stdout in a
    /// real node) and the ready file; not when `stopRequested` says a stop signal came while it started: a node told
    /// to stop announced READY, and whoever waited for it took it for a node that would serve.
    public static func start(
        spec: NodeSpec, options: NodeOptions, logger: Logger,
        makeListener: NodeListenerFactory = defaultNodeListener,
        stopRequested: () -> Bool = { false },
        announce: (String) -> Void
    ) throws(NodeError) -> NodeRuntime {
        let (options, descriptorWarning) = DescriptorBudget.fit(options, limit: DescriptorBudget.openFileLimit())
        if let descriptorWarning { logger.warning(descriptorWarning) }
        if let memoryWarning = AddressSpaceLimit.warning(
            limit: AddressSpaceLimit.current(), stack: AddressSpaceLimit.stack())
        {
            logger.warning(memoryWarning)
        }
        try checkTLSFiles(options)
        let expiry = try checkOwnIdentity(options, spec: spec)
        if let warning = expiryWarning(expiry, certificate: options.certificatePath) {
            logger.warning(warning)
        }
        if !options.plaintext {
            let keyLog: String?
            do {
                keyLog = try TLSContext.keyLogFile(in: ProcessInfo.processInfo.environment)
            } catch {
                throw NodeError(.config, error.message)
            }
            // Said as loudly as --plaintext: an exported SSLKEYLOGFILE left in a shell recorded every session's
            // secrets without a word.
            if let keyLog {
                logger.warning(
                    "SSLKEYLOGFILE is set: the TLS secrets of every connection of this node are written to \(keyLog), "
                        + "so a capture of its traffic can be decrypted; unset it unless you are capturing")
            }
        }
        // Before anything is made: a wallet started without --tsp made its data directory, then stopped.
        if let missing = spec.requiredPeers.first(where: { options.peers[$0] == nil }) {
            throw NodeError(.config, "--\(missing.rawValue) is required: this node calls the \(missing.nodeName)")
        }
        let dataDirectory = options.resolvedDataDirectory(node: spec.name)
        if let path = options.readyFile {
            // Not there yet when checked, the data directory was then made where the ready file goes, and the node
            // printed READY before it failed to put the file in place.
            let file = URL(fileURLWithPath: path).standardizedFileURL.path
            guard file != URL(fileURLWithPath: dataDirectory).standardizedFileURL.path else {
                throw NodeError(
                    .config, "--ready-file \(path) is the node's data directory; name a file, such as \(path).ready")
            }
            try ReadyFile.checkNotOneOf(
                path,
                [("--cert", options.certificatePath), ("--key", options.privateKeyPath), ("--ca", options.caPath)])
            try ReadyFile.checkWritable(path)
        }
        // Made by this start, and taken away again if the node never binds its port: a node that could not bind
        // left a new data directory with a database and keys in it, for a node that never ran. Not once it has
        // bound: its background work may then have taken notifications that only its database holds.
        let madeDirectory = DirectoryPath.firstMissing(on: dataDirectory)
        try makeDataDirectory(dataDirectory, isDefault: options.dataDirectory == nil)
        let removeMadeDirectory = {
            guard let madeDirectory else { return }
            do {
                try FileManager.default.removeItem(atPath: madeDirectory)
                logger.info(
                    "removed the data directory this start made, as the node did not start", ["path": madeDirectory])
            } catch {
                logger.warning(
                    "could not remove the data directory this start made", ["path": madeDirectory, "error": "\(error)"])
            }
        }
        // Before the lock, whose file would be the first the node wrote into another party's directory.
        if let problem = ForeignDatabaseCheck.problem(directory: dataDirectory, spec: spec) {
            throw NodeError(.config, problem)
        }
        let lock: DataDirectoryLock
        do {
            lock = try DataDirectoryLock(directory: dataDirectory)
        } catch {
            removeMadeDirectory()
            throw error
        }
        if let database = spec.database {
            if let warning = LostDatabaseCheck.warning(
                directory: dataDirectory, database: database.file, marker: database.marker)
            {
                logger.warning(warning)
            }
            let moved = LostDatabaseCheck.setAsideLeftovers(directory: dataDirectory, database: database.file)
            if !moved.isEmpty {
                logger.warning(
                    "the write-ahead log of a database that is missing was moved aside, so that the new database does "
                        + "not take it for its own", ["moved_to": moved.joined(separator: ",")])
            }
        }
        // The issuers routed by id are peers too: `--issuer bank-a=HOST:PORT` alone logged `peers=none`.
        let peerText =
            (options.peers.keys.sorted().map { "\($0.rawValue)=\(options.peers[$0]!)" }
            + options.issuerRoutes.keys.sorted().map { "issuer[\($0)]=\(options.issuerRoutes[$0]!)" })
            .joined(separator: ",")
        logger.info(
            "starting",
            [
                "version": TokenetVersion.release, "listen": options.listen.description,
                "peers": peerText.isEmpty ? "none" : peerText,
                "data_dir": dataDirectory, "tls": options.plaintext ? "off" : "on",
            ])

        let listener: any NodeListener
        do {
            listener = try makeListener(options, logger)
        } catch {
            // Under the lock still, so that no other node can have taken the directory in between.
            removeMadeDirectory()
            lock.release()
            throw error
        }
        let ready = ReadyInfo(node: spec.name, pid: getpid(), listen: listener.boundAddress.description)
        if stopRequested() {
            logger.info("told to stop while starting; not announced ready")
            return NodeRuntime(
                spec: spec, options: options, logger: logger, listener: listener, ready: ready, dataDirectoryLock: lock,
                readyFileWritten: nil)
        }
        // The ready file is written before the READY line goes out (a full disk fails the write, and a node that
        // printed READY and then exited told whoever reads stdout it was up), and moved into place after it, so
        // whoever sees the file can rely on the line.
        var prepared: ReadyFile.Prepared?
        if let path = options.readyFile {
            do {
                prepared = try ReadyFile.prepare(ready, to: path)
            } catch {
                listener.stop()
                lock.release()
                throw error
            }
        }
        logger.info("ready", ["listen": ready.listen, "pid": String(ready.pid)])
        announce(ready.line)
        var written: ReadyFile.Written?
        if let prepared {
            do {
                written = try prepared.commit()
            } catch {
                listener.stop()
                lock.release()
                throw error
            }
        }
        return NodeRuntime(
            spec: spec, options: options, logger: logger, listener: listener, ready: ready, dataDirectoryLock: lock,
            readyFileWritten: written,
            expiryWatch: watchExpiry(expiry, certificate: options.certificatePath, logger: logger))
    }

    /// Stops accepting, waits for the listener to drain, and withdraws the ready file: a node that is stopping
    /// must not look ready to anyone polling for it.
    public func stop() {
        expiryWatch?.cancel()
        listener.stop()
        readyFileWritten?.remove()
        dataDirectoryLock.release()
    }

    /// A missing, unreadable or unusable file (empty, a directory, a certificate given as the key:
    /// `TLSFileCheck`) gets a message naming its flag, before OpenSSL reports it in its own terms.
    private static func checkTLSFiles(_ options: NodeOptions) throws(NodeError) {
        guard !options.plaintext else { return }
        let files: [(String, String?, TLSFileKind)] = [
            ("--cert", options.certificatePath, .certificate), ("--key", options.privateKeyPath, .privateKey),
            ("--ca", options.caPath, .caCertificates),
        ]
        for case (let flag, let path?, let kind) in files {
            guard access(path, R_OK) == 0 else {
                throw NodeError(
                    .config, "\(flag): cannot read \(path)", cause: SystemCallError(call: "access", errno: errno))
            }
            // The node reads each TLS file more than once (to check its identity, to serve, to call each peer): a
            // pipe (`--key <(…)`) is empty by the second read, which OpenSSL then reported as a damaged PEM block.
            // Said before `TLSFileCheck`, which refuses any file that is not a regular one, in the CLI's words.
            var status = stat()
            if stat(path, &status) == 0, [S_IFIFO, S_IFSOCK].contains(status.st_mode & S_IFMT) {
                throw NodeError(
                    .config,
                    "\(flag): \(kind.name) file \(path) is a pipe, which the node reads more than once (to serve and "
                        + "to call its peers) and would find empty after the first; give the path of the file itself")
            }
            if let problem = TLSFileCheck.problem(with: path, holding: kind) {
                throw NodeError(.config, "\(flag): \(kind.name) file \(path) \(problem)")
            }
        }
    }
}
