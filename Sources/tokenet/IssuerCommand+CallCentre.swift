import TokenetRPC
import TokenetWire

/// `tokenet issuer outbox|activate-token ADDR …`: the issuer's operators, through issuer-node's IssuerCallCentre
/// service.
extension IssuerCommand {
    static let outbox = PartyAction(name: "outbox", valued: ["--digital-card"]) { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        let request = IssuerV1.OutboxRequest(digitalCardID: flags["--digital-card"] ?? "")
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await IssuerV1.IssuerCallCentre.Client(session.client).outbox(request, options: callOptions)
            },
            text: { response, _ in PartyText.outbox(response, digitalCardID: request.digitalCardID) })
    }

    static let activateToken = PartyAction(name: "activate-token") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1)
        guard let digitalCardID = options.operands.first else {
            throw CLIError(.usage, "\(command): missing DIGITAL_CARD_ID (the token's digital card id)")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await answerMayBeLost(
                    "the issuer may have had the TSP activate the token all the same: send the same command again, "
                        + "which says whether the token is ACTIVE"
                ) {
                    try await IssuerV1.IssuerCallCentre.Client(session.client).activateToken(
                        .init(digitalCardID: digitalCardID), options: callOptions)
                }
            },
            text: { response, traceID in
                PartyText.activateToken(response, digitalCardID: digitalCardID) + "\n(trace \(traceID))"
            })
    }
}

extension IssuerCommand {
    /// Runs an operator's call, adding `hint` to its failure when the issuer may have done it all the same (its
    /// answer was lost, or did not come in time: `answerMayBeLost`): the bare DEADLINE_EXCEEDED read as nothing
    /// done, where the TSP had activated the token or made the push receipt. The issuer's own account of its call
    /// to the TSP ("the TSP …") gets no guess: it says what happened there.
    static func answerMayBeLost<T>(_ hint: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RPCError where answerMayBeLost(error) && !error.message.hasPrefix("the TSP") {
            throw RPCError(error.code, "\(error.message); \(hint)", cause: error)
        }
    }
}
