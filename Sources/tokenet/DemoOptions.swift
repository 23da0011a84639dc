/// Options of `tokenet demo`.
struct DemoOptions: Sendable, Equatable {
    /// Keep the temporary directory (certificates, data dirs, node logs) instead of deleting it.
    var keepDirectory = false
    /// Upper bound in seconds for each wait: certificate generation, one node becoming ready, nodes exiting.
    var timeout = 30.0

    static let help = """
        Usage: tokenet demo [--keep-dir] [--timeout SECONDS]

        Starts tsp-node, wallet-node and issuer-node (with the cards of Tools/fixtures/issuer.json) as three
        processes on loopback ports, waits until each is ready and answers a health check, then provisions cards
        across them as the operator: a Visa card typed in and approved, a Mastercard card through an issuer push
        receipt, a card through a push session, a declined card, a card left INACTIVE for step-up and then
        activated with the one-time code from the issuer's outbox, a card stepped up for the wallet's risk score
        and activated by the issuer's call centre, the demo user's enrolment in the issuer app, a step-up card
        opened in the issuer app (app-to-app: the cardholder signs in there and the app activates it), with the
        issuer app's view of its cards in the wallet, and a card that is not eligible. The TSP reaches the issuer
        through a fault proxy (as tokenet proxy does): after those, the demo partitions it and adds one more card, which
        the TSP's stand-in rule decides once its issuer deadline (5 s) has passed, then heals the link and cuts its
        connections, and the issuer answers again. Each step prints its trace id, and each party's view (wallet
        cards, TSP tokens and their audit trail) follows. Last, a payment, a suspend and a resume, and an issuer
        message reach every party through the TSP's notifications, and each party's view of them is printed.
        Then the nodes are stopped with SIGTERM and the demo reports how each exited.
        It needs the checkout tokenet was built from: certificates come from its Tools/gen-certs and the issuer's
        cards from Tools/fixtures/issuer.json; without them the demo says so before any node starts (status 1).

        Options:
          --keep-dir           Keep the temporary directory with certificates, data and node logs.
          --timeout SECONDS    Longest wait for each step (default 30; at 8 or less the fault scenario is left out).
          --help               Show this help.

        Exit status: 0 when every node became ready, every scenario ended as expected and every node exited with
        status 0; 1 otherwise; 2 for bad options.
        """

    init() {}

    /// The options that take a value (`ArgumentScanner`).
    static let valuedFlags: Set<String> = ["--timeout"]

    init(parsing arguments: [String]) throws(CLIError) {
        var scanner = ArgumentScanner(arguments, command: "demo", valued: Self.valuedFlags)
        while let item = try scanner.next() {
            switch item {
            case .flag("--keep-dir", nil): keepDirectory = true
            case .flag("--keep-dir", _): throw CLIError(.usage, "demo: --keep-dir takes no value")
            case .valued("--timeout", let text): timeout = try Sandbox.timeout(text, command: "demo")
            case .valued(let flag, _), .flag(let flag, _):
                let hint = ArgumentScanner.singleDashHint(flag, options: Self.valuedFlags.union(["--keep-dir"]))
                throw CLIError(.usage, "demo: unknown option '\(flag)'\(hint)")
            case .endOfOptions: continue
            case .operand(let operand): throw CLIError(.usage, "demo: unexpected argument '\(operand)'")
            }
        }
    }
}
