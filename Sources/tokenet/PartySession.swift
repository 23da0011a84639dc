import TokenetRPC
import TokenetTransport
import TokenetWire

/// Runs one party command over an `InspectSession`: connects as `tokenet call` does, gives the call a fresh trace
/// id (printed with the result, to find the flow in the nodes' logs), and prints the response as text or JSON.
enum PartySession {
    /// Without `--deadline`, a party command waits at most this long: the flows behind it cross three nodes.
    static let defaultDeadline = Duration.seconds(30)

    /// `exitStatus` gives the status of an answer that holds results of its own (a batch, one result per token):
    /// 0 unless the answer says something was refused.
    static func run<Response: ProtoMessage>(
        _ options: InspectOptions, json: Bool,
        call: @escaping @Sendable (InspectSession, CallOptions) async throws -> Response,
        text: @escaping @Sendable (Response, _ traceID: String) -> String,
        exitStatus: @escaping @Sendable (Response) -> Int32 = { _ in 0 }
    ) throws(CLIError) -> Int32 {
        var options = options
        options.deadline = options.deadline ?? defaultDeadline
        let address = options.address.description
        let party = options.party
        return try InspectSession.run(options, tracedFailures: true) { session in
            try checkParty(of: session)
            let (response, traceID): (Response, String)
            do {
                (response, traceID) = try await traced(session) { try await call(session, $0) }
            } catch var error as RPCError {
                error.message = addressed(error.message, address)
                if let wentAway = wentAwayNote(
                    error, party: party, address: address, greeted: session.client.peerGreeted)
                {
                    error.message += wentAway
                }
                throw error
            }
            printOut(json ? try response.jsonString(options: .pretty) : text(response, traceID))
            return exitStatus(response)
        }
    }

    /// What to make of a node that went away with the call sent (killed, or its machine gone): the bare
    /// "connection lost: read failed: …" named neither the node nor that the change may have been made, which it
    /// had been (a suspend, a delete, an activation). Nil for other failures and for messages that say already.
    ///
    /// `greeted`: whether the node's hello came. A node that sent none never took a call (the connection failed as
    /// it was made, which the CLI says as "cannot connect"), so nothing "may have been done".
    static func wentAwayNote(_ error: RPCError, party: PeerRole?, address: String, greeted: Bool = true) -> String? {
        // This command's own connection, not a link of the node's that it reported in the same words.
        // The command's own words about the failure (issuer suspend-tokens) wrap the connection's error as its cause.
        let endedHere = error.connectionEndedHere || (error.cause as? RPCError)?.connectionEndedHere == true
        let node = party.map { "the \($0.rawValue)-node at \(address)" } ?? "the node at \(address)"
        // A call that found the connection closed, as a node closes its connections when it stops, did nothing. Only
        // a clean close: one closed on a problem (a TLS port to a plaintext client, a keepalive unanswered) says why.
        if error.code == .unavailable, error.callWasNeverSent, error.message == RPCError.closedBeforeSent {
            return "; nothing was sent to \(node), which closed the connection (as a node does when it stops): run "
                + "the command again once the node is back"
        }
        // A call the node refused as it began to stop (its goaway came first) was not processed. Refused for another
        // reason (too many connections from this certificate), the node's own words say what to do, and it is not
        // stopping: "run the command again once the node is back" had the person wait for a restart never coming.
        if error.code == .unavailable, error.callWasNotProcessed {
            guard error.callMetAStoppingPeer else { return nil }
            return "; \(node) is stopping, so nothing was done: run the command again once the node is back"
        }
        guard error.code == .unavailable, endedHere, greeted, error.message.hasPrefix("connection lost"),
            !error.callWasNotProcessed, !error.callWasNeverSent
        else { return nil }
        // A command that says already what may have been done (issuer suspend-tokens) still names the node.
        if error.message.contains("may have") { return "; \(node) went away during the call" }
        return "; \(node) went away during the call, so what it was asked may or may not have been done: see its "
            + "state once the node is back before running the command again"
    }

    /// Refuses a node whose certificate names another role than the command's party, before anything is sent: a
    /// `wallet add-card` given the issuer's address sent it the card number and security code, and only its
    /// UNIMPLEMENTED answer said the address was wrong. Still UNIMPLEMENTED (exit status 76), as that answer was.
    /// Over plaintext (debug) there is no certificate to read.
    static func checkParty(of session: InspectSession) throws {
        guard let expected = session.options.party, let peer = session.client.peerIdentity, peer.role != expected
        else { return }
        let node = "\(expected.rawValue)-node"
        let wanted = "\(expected == .issuer ? "an" : "a") \(node)"
        let actual =
            peer.role == .operator
            ? "an operator's certificate"
            : "\(peer.role == .issuer ? "an" : "a") \(peer.role.rawValue)-node's certificate"
        throw RPCError(
            .unimplemented,
            "\(session.options.address) presented \(actual) (\(peer.uri)), not \(wanted)'s: give the address of "
                + "\(wanted); nothing was sent", cause: NothingSent())
    }

    /// A node's hint of a command to run on itself (`tokenet issuer unlock ADDR ch-bob`) with the address this
    /// command called in place of ADDR, so that it can be run as printed. A node does not know the address it was
    /// called at; hints about another party name it ISSUER_ADDR or WALLET_ADDR, and are left as they are.
    static func addressed(_ message: String, _ address: String) -> String {
        guard message.contains(" ADDR") else { return message }
        var words = message.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        for index in words.indices.dropFirst(3)
        where words[index] == "ADDR" && words[index - 3].hasSuffix("tokenet")
            && [words[index - 2], words[index - 1]].allSatisfy({ $0.allSatisfy { $0.isLowercase || $0 == "-" } })
        {
            words[index] = address
        }
        return words.joined(separator: " ")
    }

    /// Calls `body` with the session's call options plus a new trace id, and returns that id with the response.
    static func traced<Response>(
        _ session: InspectSession, _ body: (CallOptions) async throws -> Response
    ) async throws -> (Response, String) {
        var callOptions = session.callOptions
        let traceID = callOptions.metadata.traceID ?? Metadata.newTraceID()
        callOptions.metadata.setTraceID(traceID)
        return (try await body(callOptions), traceID)
    }
}

/// The cause of an error for a command that sent no call: no node saw it, so no trace id finds it in a log.
struct NothingSent: Error {}
