import TokenetRPC
import TokenetWire

/// `tokenet tsp keys|rotate-key|forget-key ADDR …`: the TSP's card-data encryption keys, as it publishes them
/// (`Provisioning.GetEncryptionKeys`), and the operator's rotation (`TspControl`), to test how wallets and issuers
/// follow a new key and what they are told once an old one is forgotten.
extension TSPCommand {
    static let keyActions = [keys, rotateKey, forgetKey]

    static let keysHelp = """
        Card-data keys:
               tokenet tsp keys ADDR [OPTIONS]
               tokenet tsp rotate-key ADDR [OPTIONS]
               tokenet tsp forget-key ADDR KID [OPTIONS]

        keys lists the keys the TSP publishes for card data (Provisioning/GetEncryptionKeys): the current one,
        which wallets and issuers encrypt to, then the retired ones it still decrypts, newest first. rotate-key
        makes a new current key and retires the current one; wallet-node and issuer-node pick the new key up at
        their next card. forget-key deletes a retired key: card data encrypted to it is refused from then on
        (INVALID_ARGUMENT, "no decryption key has kid …"); the current key cannot be forgotten. Both are kept in
        the TSP's data directory (keys/), across restarts.
        """

    static let keys = PartyAction(name: "keys") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await TspV1.Provisioning.Client(session.client).getEncryptionKeys(.init(), options: callOptions)
            },
            text: { response, _ in keyLines(response.keys) })
    }

    static let rotateKey = PartyAction(name: "rotate-key") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...0)
        let address = options.address.description
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await TspV1.TspControl.Client(session.client).rotateEncryptionKey(.init(), options: callOptions)
            },
            text: { response, traceID in
                let current = response.keys.first(where: \.current)?.publicKeyIdentifier ?? "(none)"
                return "rotated: the current key is now \(current); \(response.retiredKeyIdentifier) is retired and "
                    + "still decrypts until tokenet tsp forget-key \(address) \(response.retiredKeyIdentifier)\n"
                    + keyLines(response.keys) + "\n(trace \(traceID))"
            })
    }

    static let forgetKey = PartyAction(name: "forget-key") { flags, command throws(CLIError) in
        let options = try InspectOptions(parsing: flags.rest, command: command, operands: 0...1, named: ["KID"])
        guard let kid = options.operands.first else {
            throw CLIError(.usage, "\(command): missing KID, a retired key's identifier (see tokenet tsp keys)")
        }
        return try PartySession.run(
            options, json: flags.json,
            call: { session, callOptions in
                try await TspV1.TspControl.Client(session.client).forgetEncryptionKey(
                    .init(publicKeyIdentifier: kid), options: callOptions)
            },
            text: { response, traceID in
                "forgotten: card data encrypted to \(kid) is refused from now on\n" + keyLines(response.keys)
                    + "\n(trace \(traceID))"
            })
    }

    /// One line per key: `current` or `retired`, then its identifier (the JWE kid).
    static func keyLines(_ keys: [TspV1.EncryptionKey]) -> String {
        guard !keys.isEmpty else { return "(the TSP publishes no key)" }
        return keys.map { ($0.current ? "current  " : "retired  ") + $0.publicKeyIdentifier }
            .joined(separator: "\n")
    }
}
