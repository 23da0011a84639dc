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
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...1, named: ["DIGITAL_CARD_ID"])
        guard let digitalCardID = options.operands.first else {
            throw CLIError(.usage, "\(command): missing DIGITAL_CARD_ID (the token's digital card id)")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await hintingLostAnswer(
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
