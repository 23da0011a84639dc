import TokenetCard
import TokenetRPC
import TokenetWire

/// `tokenet tsp encrypt-card ADDR --pan … --exp MM/YY`: the card data a wallet sends the TSP (`EncryptedCardData`, a
/// JWE to the TSP's current key), for a wallet of one's own that calls CheckEligibility itself, by `tokenet call` or a
/// scenario: the TSP's keys change with each sandbox, so the JWE is made against the running TSP.
extension TSPCommand {
    static let encryptCardHelp = """
        Usage: tokenet tsp encrypt-card ADDR --pan NUMBER --exp MM/YY [--cvc CVC] [--name NAME] [OPTIONS]

        encrypt-card asks the TSP at ADDR for its current encryption key (Provisioning/GetEncryptionKeys) and prints
        the card as the TSP takes it from a wallet: {"jwe": …, "publicKeyIdentifier": …}, the value of
        encryptedCardData in a CheckEligibility request. The card number never leaves this process unencrypted.
        --pan - and --cvc - read the value from standard input (a line each, in the order given; asked for without
        echo at a terminal), so that it is not on the command line. The card number is checked for its form only (digits,
        with spaces or dashes), not for its length, its check digit or an expiry in the past: a sandbox's wallet may
        want to see how the TSP answers a card a real wallet would not send.
        """

    static let encryptCard = PartyAction(name: "encrypt-card", valued: ["--pan", "--exp", "--cvc", "--name"]) {
        flags, command throws(CLIError) in
        // Options first: a mistyped one (`--pna`) is named, not taken for a missing --pan.
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        guard flags["--pan"] != nil else { throw CLIError(.usage, "\(command): give the card number with --pan") }
        guard let expiry = flags["--exp"] else { throw CLIError(.usage, "\(command): --pan needs --exp MM/YY") }
        let expiryDate: CardExpiry
        switch ManualCardForm.expiry(expiry) {
        case .success(let parsed): expiryDate = parsed
        case .failure(let problem): throw CLIError(.usage, "\(command): \(problem.message)")
        }
        let name = flags["--name"] ?? ""
        for problem in [
            flags["--cvc"] == "-" ? nil : ManualCardForm.securityCodeProblem(flags["--cvc"] ?? ""),
            ManualCardForm.cardholderNameProblem(name),
        ] {
            if let problem { throw CLIError(.usage, "\(command): \(problem)") }
        }
        let typed = try flags.secret("--pan", connectingWith: options) ?? ""
        let cvc = try flags.secret("--cvc", connectingWith: options) ?? ""
        guard let pan = PAN.digits(typed: typed), !pan.isEmpty else {
            throw CLIError(.usage, "\(command): the card number may hold only \(PAN.typedForm)")
        }
        if let problem = ManualCardForm.securityCodeProblem(cvc) { throw CLIError(.usage, "\(command): \(problem)") }
        let card = CardData(
            accountNumber: pan, expirationDate: CardData.ExpirationDate(expiryDate), cvv2: cvc.isEmpty ? nil : cvc,
            name: name.isEmpty ? nil : name)
        return try PartySession.run(
            options, json: true,
            call: { session, callOptions async throws -> CardV1.EncryptedCardData in
                try await CardV1.EncryptedCardData.forTSP(card, client: session.client, options: callOptions)
            },
            text: { (response: CardV1.EncryptedCardData, _) in (try? response.jsonString(options: .pretty)) ?? "" })
    }
}
