import TokenetRPC
import TokenetWire

/// `tokenet wallet select-method|submit-otp|resend-otp ADDR CARD_REF …`: ID&V for a card the issuer left
/// INACTIVE, sent to a wallet-node's WalletIdv service (as the operator).
extension WalletCommand {
    static let selectMethod = PartyAction(name: "select-method") { flags, command throws(CLIError) in
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...2, named: ["CARD_REF", "METHOD_ID"])
        guard options.operands.count == 2 else {
            throw CLIError(.usage, "\(command): give CARD_REF and METHOD_ID (the ID&V ids accept-terms printed)")
        }
        let request = WalletV1.WalletSelectIdvMethodRequest(
            cardRef: options.operands[0], methodID: options.operands[1])
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await WalletV1.WalletIdv.Client(session.client).selectIdvMethod(request, options: callOptions)
            },
            text: { response, traceID in PartyText.selectMethod(response) + "\n(trace \(traceID))" })
    }

    static let submitOTP = PartyAction(name: "submit-otp") { flags, command throws(CLIError) in
        let options = try InspectOptions(
            parsing: flags.rest, command: command, operands: 0...2, named: ["CARD_REF", "CODE"])
        guard options.operands.count == 2 else {
            throw CLIError(.usage, "\(command): give CARD_REF and CODE (the one-time code the cardholder received)")
        }
        let request = WalletV1.WalletSubmitOtpRequest(cardRef: options.operands[0], code: options.operands[1])
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await WalletV1.WalletIdv.Client(session.client).submitOTP(request, options: callOptions)
            },
            text: { response, traceID in
                PartyText.submitOTP(response, address: "\(options.address)") + "\n(trace \(traceID))"
            })
    }

    static let resendOTP = PartyAction(name: "resend-otp") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["CARD_REF"])
        guard let cardRef = options.operands.first else {
            throw CLIError(.usage, "\(command): missing CARD_REF (the card-N that add-card printed)")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await WalletV1.WalletIdv.Client(session.client).resendOTP(
                    .init(cardRef: cardRef), options: callOptions)
            },
            text: { response, traceID in PartyText.resendOTP(response) + "\n(trace \(traceID))" })
    }
}
