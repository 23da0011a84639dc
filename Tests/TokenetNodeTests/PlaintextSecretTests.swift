import Testing
import TokenetRPC
import TokenetTestSupport

/// Card numbers and the other secrets a command sends never cross the network unencrypted: with `--plaintext`, a
/// command that would send one is refused before it connects (the party commands' nodes would refuse them over
/// plaintext anyway, with the secret received).
@Suite struct PlaintextSecretTests {
    @Test(arguments: [
        (["wallet", "add-card", "--pan", "4761000010000009", "--exp", "12/29"], "card number"),
        (["wallet", "add-card", "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123"], "card number"),
        (["issuer", "renew-card", "card-1", "--pan", "4761000010000017", "--exp", "12/31"], "card number"),
        (["issuer-app", "login", "u-1", "--pin", "2580"], "PIN"),
        (["issuer-app", "activate", "--ref", "r", "--name", "n", "--pin", "1234", "--code", "c"], "activation code"),
    ])
    func aCommandDoesNotSendASecretInTheClear(command: [String], secret: String) async throws {
        let listener = try LoopbackSocket.ListeningPort()
        var arguments = command
        arguments.insert("127.0.0.1:\(listener.port)", at: 2)
        arguments.append("--plaintext")
        let result = try await runTokenet(arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("--plaintext would send the \(secret) unencrypted")
                && result.stderr.contains("drop --plaintext"), "\(result.stderr)")
        #expect(!result.stderr.contains("4761000010000009") && !result.stderr.contains("4761000010000017"))
        #expect(!listener.hasPendingConnection, "the command connected")
    }

    /// The card number may be written as a person types one, in any field.
    @Test(arguments: [
        #"{"card": {"pan": "4761000010000009"}}"#, #"{"card": {"pan": "4761 0000 1000 0009"}}"#,
        #"{"deviceName": "card 4761-0000-1000-0009"}"#, #"{"a": 1, "b": "x5400000010000037"}"#,
        // JSON escapes are read as the node reads them.
        #"{"service": "\u0034761000010000009"}"#, #"{"service": "4761\u00200000\u00201000\u00200009"}"#,
        #"{"service": "4761\u002d0000-1000-0009"}"#, #"{"\u0034761000010000009": 1}"#, #"{"n": 4761000010000009}"#,
    ])
    func aCallWhoseRequestHoldsACardNumberIsNotSentInTheClear(request: String) async throws {
        let listener = try LoopbackSocket.ListeningPort()
        let result = try await runTokenet([
            "call", "127.0.0.1:\(listener.port)", "--plaintext", "tokenet.wallet.v1.WalletControl/AddCard", "-d",
            request,
        ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("request holds a card number, and --plaintext would send it unencrypted"),
            "\(result.stderr)")
        #expect(!result.stderr.contains("0000"), "\(result.stderr)")
        #expect(!listener.hasPendingConnection, "the command connected")
    }

    /// So does a metadata value that holds one.
    @Test(arguments: ["x-pan: 4761000010000009", "x-note: card 4761 0000 1000 0009"])
    func aCallWhoseMetadataHoldsACardNumberIsNotSentInTheClear(header: String) async throws {
        let listener = try LoopbackSocket.ListeningPort()
        let result = try await runTokenet([
            "call", "127.0.0.1:\(listener.port)", "--plaintext", "tokenet.health.v1.Health/Check", "-H", header,
        ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("holds a card number, and --plaintext would send it unencrypted"))
        #expect(!result.stderr.contains("0000"), "\(result.stderr)")
        #expect(!listener.hasPendingConnection, "the command connected")
    }

    /// A request without one goes as before, long numbers and all: a number that is no card number (one digit off
    /// a card number's check digit, a uint64, a time in milliseconds), or a card number of a scheme the TSP takes no
    /// card of.
    @Test(arguments: [
        #"{"service": "4761000010000008"}"#, #"{"service": "18446744073709551615"}"#,
        #"{"service": "1764647000000"}"#, #"{"service": "6011 0009 9013 9424"}"#,
    ])
    func aCallWithoutACardNumberIsSent(request: String) async throws {
        let result = try await runTokenet(servedBy: RPCRouter()) { address in
            ["call", address, "--plaintext", "tokenet.health.v1.Health/Check", "-d", request]
        }
        #expect(result.status == 64 + 12, "\(result.stderr)")
        #expect(result.stderr.contains("UNIMPLEMENTED"), "\(result.stderr)")
    }
}
