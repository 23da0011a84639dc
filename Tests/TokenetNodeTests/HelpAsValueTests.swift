import Testing
import TokenetTestSupport

/// Every option of every `tokenet` command that takes a value takes the next argument as it, `--help` and `-h`
/// included: the command goes on with that value (refusing it, or failing to connect to an address where nothing
/// listens), and never prints its help instead. A help request where an option may stand still shows the help.
@Suite struct HelpAsValueTests {
    /// Command lines with VALUE where the option under test takes its value; nothing listens at 127.0.0.1:1.
    static let commands = [
        "list 127.0.0.1:1 --cacert VALUE",
        "describe 127.0.0.1:1 x.Y --cert VALUE",
        "call 127.0.0.1:1 x.Y/Z --key VALUE",
        "call 127.0.0.1:1 --plaintext x.Y/Z --deadline VALUE",
        "call 127.0.0.1:1 --plaintext x.Y/Z -H VALUE",
        "call 127.0.0.1:1 --plaintext x.Y/Z --data VALUE",
        "tsp tokens 127.0.0.1:1 --plaintext --header VALUE",
        "wallet add-card 127.0.0.1:1 --plaintext --exp 12/29 --pan VALUE",
        "wallet add-card 127.0.0.1:1 --plaintext --pan 4111111111111111 --exp VALUE",
        "wallet add-card 127.0.0.1:1 --plaintext --pan 4111111111111111 --exp 12/29 --cvc VALUE",
        "wallet add-card 127.0.0.1:1 --plaintext --pan 4111111111111111 --exp 12/29 --name VALUE",
        "wallet add-card 127.0.0.1:1 --plaintext --pan 4111111111111111 --exp 12/29 --language VALUE",
        "wallet add-card 127.0.0.1:1 --plaintext --pan 4111111111111111 --exp 12/29 --input-method VALUE",
        "wallet add-card 127.0.0.1:1 --plaintext --scheme visa --receipt VALUE",
        "wallet add-card 127.0.0.1:1 --plaintext --receipt r --scheme VALUE",
        "wallet add-card 127.0.0.1:1 --plaintext --push-session VALUE",
        "wallet open-issuer-app 127.0.0.1:1 --plaintext card-1 --caller VALUE",
        "wallet suspend 127.0.0.1:1 --plaintext card-1 --reason VALUE",
        "issuer outbox 127.0.0.1:1 --plaintext --digital-card VALUE",
        "issuer suspend-tokens 127.0.0.1:1 --plaintext DNITHE1 --reason VALUE",
        "issuer delete-tokens 127.0.0.1:1 --plaintext --reason X --card VALUE",
        "issuer renew-card 127.0.0.1:1 --plaintext card-1 --pan VALUE",
        "issuer renew-card 127.0.0.1:1 --plaintext card-1 --exp VALUE",
        "issuer send-message 127.0.0.1:1 --plaintext DNITHE1 --body b --title VALUE",
        "issuer send-message 127.0.0.1:1 --plaintext DNITHE1 --title t --body VALUE",
        "issuer send-message 127.0.0.1:1 --plaintext DNITHE1 --title t --body b --action VALUE",
        "issuer unlock 127.0.0.1:1 --plaintext u-1 --account VALUE",
        "issuer push-card 127.0.0.1:1 --plaintext card-1 --mode VALUE",
        "issuer push-card 127.0.0.1:1 --plaintext card-1 --mode session --wallet-account VALUE",
        "issuer-app authorize 127.0.0.1:1 --plaintext s-1 --pin VALUE",
        "issuer-app activate 127.0.0.1:1 --plaintext --ref r --name n --pin 1234 --code VALUE",
        "issuer-app activate 127.0.0.1:1 --plaintext --code c --name n --pin 1234 --ref VALUE",
        "issuer-app activate 127.0.0.1:1 --plaintext --code c --ref r --pin 1234 --name VALUE",
        "issuer-app activate-linked 127.0.0.1:1 --plaintext u-1 --pin VALUE",
        "issuer-app login 127.0.0.1:1 --plaintext u-1 --pin VALUE",
        "tsp tokens 127.0.0.1:1 --plaintext --wallet-account VALUE",
        "tsp resume-token 127.0.0.1:1 --plaintext DNITHE1 --reason VALUE",
        "tsp simulate-transaction 127.0.0.1:1 --plaintext --amount 1 --merchant m --card VALUE",
        "tsp simulate-transaction 127.0.0.1:1 --plaintext --card DNITHE1 --merchant m --amount VALUE",
        "tsp simulate-transaction 127.0.0.1:1 --plaintext --card DNITHE1 --amount 1 --merchant VALUE",
        "tsp simulate-transaction 127.0.0.1:1 --plaintext --card DNITHE1 --amount 1 --merchant m --currency VALUE",
        "decode --type VALUE",
        "decode --method VALUE",
        "decode --calls VALUE",
        "proxy --to VALUE",
        "proxy --to 127.0.0.1:1 --listen VALUE",
        "proxy --to 127.0.0.1:1 --delay VALUE",
        "demo --timeout VALUE",
        "scenario --junit VALUE",
        "scenario --pki VALUE",
        "scenario --timeout VALUE",
        "scenario --tsp VALUE",
        "scenario --issuer VALUE",
        "scenario --wallet VALUE",
        "up --timeout VALUE",
        "up --dir VALUE --timeout 0",
    ]

    @Test(arguments: commands, ["--help", "-h"])
    func helpAsAValueIsThatValue(command: String, value: String) async throws {
        let arguments = command.split(separator: " ").map { $0 == "VALUE" ? value : String($0) }
        let result = try await runTokenet(arguments)
        let shown = arguments.joined(separator: " ")
        #expect(result.status != 0 && result.stdout.isEmpty, "\(shown): \(result.stdout)")
        #expect(!result.stderr.isEmpty && !result.stderr.contains("needs a value"), "\(shown): \(result.stderr)")
    }

    /// A valued option followed by another of the command's valued options has had its value left out: said, naming
    /// it. The second option was taken as its value, and the refusal blamed the second (`--pan needs --exp MM/YY`,
    /// `unexpected arguments: 123`).
    @Test(arguments: [
        (["wallet", "add-card", "127.0.0.1:1", "--pan", "--exp", "12/29"], "--pan", "--exp"),
        (["wallet", "add-card", "127.0.0.1:1", "--pan", "--cvc", "123", "--exp", "12/29"], "--pan", "--cvc"),
        (["wallet", "add-card", "127.0.0.1:1", "--push-session", "--language", "es"], "--push-session", "--language"),
    ])
    func aValuedOptionFollowedByAnotherIsNamed(arguments: [String], option: String, next: String) async throws {
        let result = try await runTokenet(arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("\(option) needs a value, but the option \(next) follows it"), "\(result.stderr)")
    }

    /// The help is still there wherever an option may stand, also after a valued option with its value and after
    /// the action of a party command.
    @Test(arguments: [
        ["wallet", "add-card", "127.0.0.1:1", "--pan", "4111111111111111", "--help"],
        ["wallet", "--help"], ["issuer", "renew-card", "-h"], ["decode", "--type", "x", "-h"],
        ["proxy", "--delay", "5ms", "--help"], ["scenario", "--junit", "r.xml", "--help"], ["up", "--dir", "d", "-h"],
        ["demo", "--timeout", "5", "--help"],
    ])
    func helpWhereAnOptionStandsIsHelp(command: [String]) async throws {
        let result = try await runTokenet(command)
        #expect(result.status == 0 && result.stdout.hasPrefix("Usage: tokenet \(command[0])"), "\(result.stdout)")
    }
}
