import Foundation
import TokenetNode
import TokenetTransport

/// `tokenet pki init DIR`: a development certificate authority and a certificate for each role, made by the
/// repository's `Tools/gen-certs` (the one place that knows how Tokenet's certificates look), so that a person
/// setting up nodes by hand needs no second name for it.
enum PKICommand {
    static let subcommand = Subcommand(
        name: "pki",
        summary: "Create a development CA and a certificate for each role (and more nodes) in a directory.",
        help: help,
        valuedOptions: ["--node"]
    ) { arguments throws(CLIError) in
        try run(arguments)
    }

    static let help = """
        Usage: tokenet pki init DIR [--node ROLE/ID]...

        Creates a development certificate authority and one certificate per role in DIR, with
        Tools/gen-certs of the Tokenet repository this tokenet was built from (openssl makes them):

          DIR/ca.pem, DIR/ca.key       the CA (EC P-256)
          DIR/ROLE.pem, DIR/ROLE.key   for ROLE in tsp, issuer, wallet and operator, each with the URI SAN
                                       tokenet://ROLE/ROLE-1, DNS SAN localhost and IP SAN 127.0.0.1

        Files already in DIR are kept, so running it again adds only what is missing. A Tokenet certificate
        there (with its key) that DIR/ca.pem does not verify, signed by an earlier CA or expired, is made
        again with the names it had, those of earlier --node runs too; other files in DIR are left alone.
        One it verifies that no node could use (it names another node, or its key is another's) fails
        the run, named, to be moved aside.

        Options:
          --node ROLE/ID  Also create DIR/ID.pem and DIR/ID.key for one more node of ROLE (tsp, issuer,
                          wallet or operator) with the URI SAN tokenet://ROLE/ID, such as a second issuer
                          node (--node issuer/issuer-2). May be given more than once.
          -h, --help      Show this help.

        Exit status: 0 once DIR holds usable files, 1 when they could not be made (the reason is printed),
        2 for a usage mistake.
        """

    static func run(_ arguments: [String]) throws(CLIError) -> Int32 {
        PrivateFiles.fromNowOn()
        guard arguments.first == "init" else {
            let typed = arguments.first.map { "'\(maskPAN($0))'" } ?? "nothing"
            throw CLIError(.usage, "pki: expected 'init DIR', got \(typed); see tokenet pki --help")
        }
        var directory: String?
        var nodes: [String] = []
        var scanner = ArgumentScanner(
            Array(arguments.dropFirst()), command: "pki init", valued: ["--node"], repeatable: ["--node"])
        while let item = try scanner.next() {
            switch item {
            case .valued("--node", let node):
                guard node.wholeMatch(of: /(tsp|issuer|wallet|operator)\/[A-Za-z0-9._-]+/) != nil else {
                    throw CLIError(
                        .usage,
                        "pki init: --node: expected ROLE/ID with ROLE tsp, issuer, wallet or operator and ID of "
                            + "letters, digits, '.', '_' and '-', got '\(maskPAN(node))'")
                }
                let id = node.split(separator: "/", maxSplits: 1)[1]
                // A node id is shown in full in listings (the TSP's WALLET column) and stored as it is: a card
                // number there is card data in the clear. Refused before anything echoes the id.
                let maskedID = maskPAN(String(id))
                guard maskedID == id else {
                    throw CLIError(
                        .usage,
                        "pki init: --node: the ID '\(maskedID)' holds a card number, which listings would show in "
                            + "full; choose another ID")
                }
                // The id is the certificate's common name too, which holds at most 64 characters (openssl refused it
                // with "Error adding subject name attribute").
                guard id.count <= 64 else {
                    throw CLIError(
                        .usage, "pki init: --node \(node): an ID has at most 64 characters; this one has \(id.count)")
                }
                // The files gen-certs makes anyway, and an id given twice, would be written over without a word.
                // Compared without case: CA.pem beside ca.pem is one file where names ignore case.
                // A hidden file (and `.` or `..` a directory), which gen-certs' renewal of the certificates after a
                // CA change skips: it was left signed by the old CA, and DIR said to hold it.
                guard !id.hasPrefix(".") else {
                    throw CLIError(
                        .usage,
                        "pki init: --node \(node): an ID starting with '.' makes a hidden file; choose another ID")
                }
                guard !["ca", "tsp", "issuer", "wallet", "operator"].contains(id.lowercased()) else {
                    throw CLIError(
                        .usage, "pki init: --node \(node): \(id).pem is made for every DIR anyway; choose another ID")
                }
                // `ca.key` as an ID made ca.key.pem and ca.key.key beside the CA's key.
                guard !id.lowercased().hasSuffix(".pem"), !id.lowercased().hasSuffix(".key") else {
                    throw CLIError(
                        .usage, "pki init: --node \(node): an ID ending in .pem or .key names a file; choose another ID"
                    )
                }
                guard
                    !nodes.contains(where: {
                        $0.split(separator: "/", maxSplits: 1)[1].lowercased() == id.lowercased()
                    })
                else {
                    throw CLIError(
                        .usage,
                        "pki init: --node \(node): the ID \(id) is given twice (IDs are compared without case); give "
                            + "each node its own")
                }
                nodes.append(node)
            case .operand(let operand):
                guard directory == nil else {
                    throw CLIError(.usage, "pki init: give one DIR, not also '\(maskPAN(operand))'")
                }
                directory = operand
            case .flag(let flag, _), .valued(let flag, _):
                throw CLIError(.usage, "pki init: unknown option '\(maskPAN(flag))'; see tokenet pki --help")
            case .endOfOptions:
                continue
            }
        }
        guard let directory, !directory.isEmpty else { throw CLIError(.usage, "pki init: missing DIR") }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw CLIError(
                .usage,
                "pki init: \(directory) is a file, not a directory; give a directory, or a path "
                    + "where one can be made")
        }
        guard let root = RepositoryLocator.repositoryRoot else {
            throw CLIError(
                .setup,
                "pki init: Tools/gen-certs was not found: tokenet looks for the Tokenet repository above its own "
                    + "executable and the working directory; run it from a checkout (Tools/tokenet pki init DIR)")
        }
        let script = root.appendingPathComponent("Tools/gen-certs")
        guard FileManager.default.isExecutableFile(atPath: script.path) else {
            throw CLIError(.setup, "pki init: \(script.path) is missing or not executable")
        }
        let process = Process()
        process.executableURL = script
        // A DIR that starts with "-" would read as an option to gen-certs.
        process.arguments =
            nodes.flatMap { ["--node", $0] } + [directory.hasPrefix("-") ? "./" + directory : directory]
        do {
            try process.run()
        } catch {
            throw CLIError(.setup, "pki init: cannot run \(script.path): \(error.localizedDescription)")
        }
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw CLIError(
                .setup,
                "pki init: Tools/gen-certs failed (exit status \(process.terminationStatus)); its reason is above")
        }
        // The certificates with their keys: a .pem alone (a certificate without its key, or a key kept as .pem) was
        // listed "and their keys" too.
        let files = Set((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
        let made = files.filter { $0.hasSuffix(".pem") && files.contains(String($0.dropLast(4)) + ".key") }.sorted()
        printOut("\(directory) holds \(made.joined(separator: ", ")) and their keys")
        // Keys kept from an earlier run that others can read: nodes and the CLI refuse them, so said now.
        let keys = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".key") }.sorted()
        for key in keys {
            let path = (directory as NSString).appendingPathComponent(key)
            if let problem = TLSFileCheck.problem(with: path, holding: .privateKey) {
                printError("tokenet: pki init: warning: \(path) \(problem); nodes and the CLI refuse it as it is")
            }
        }
        return 0
    }
}
