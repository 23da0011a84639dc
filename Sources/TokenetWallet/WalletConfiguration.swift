import Foundation
import TokenetNode
import TokenetWire

/// Who this wallet is to the TSP: its wallet account, the device cards are provisioned to, and the risk scores it
/// reports with each digitization.
///
/// Read from `wallet.json` in the node's data directory when that file exists, for example
/// `{"walletAccountId": "acct-7", "device": {"deviceId": "watch-1", "deviceType": "WATCH"},
///   "risk": {"accountScore": 2, "deviceScore": 1, "recommendation": "APPROVE"}, "provider": "apple-pay"}`; every
/// key is optional, an unknown key (or one given twice) is refused. `provider` (google-pay, samsung-pay or apple-pay; Google Pay by
/// default) is which wallet this is when it opens an issuer app for in-app activation.
public struct WalletConfiguration: Sendable, Equatable {
    public static let fileName = "wallet.json"
    /// The account the demo and the CLI assume when none is configured.
    public static let defaultAccountID = "wallet-account-1"

    /// The account a new wallet starts on, and the account of cards stored before the wallet recorded one per card.
    /// Once the person makes another account active (`WalletSelection`), the wallet keeps that choice instead.
    public var walletAccountID = Self.defaultAccountID
    public var device = CardV1.DeviceInfo(
        deviceID: "device-1", deviceType: "PHONE", deviceName: "Tokenet phone", osName: "TokenetOS", osVersion: "1.0")
    public var risk = CardV1.WalletRiskData(accountScore: 1, deviceScore: 1, recommendation: .approve)
    public var provider = WalletProvider.googlePay
    /// How long a payment that took its key waits at most for the card's next batch (half of what is left of its
    /// deadline when that is less). Not in wallet.json: tests on a loaded machine give it longer.
    public var refillWaitAfterPayment = Duration.seconds(2)

    public init() {}

    /// Where `load(fromDirectory:)` looks.
    public static func path(inDirectory directory: String) -> String {
        (directory as NSString).appendingPathComponent(fileName)
    }

    /// The configuration in `directory/wallet.json`, or the defaults when there is no such file.
    public static func load(fromDirectory directory: String) throws(NodeError) -> WalletConfiguration {
        let path = path(inDirectory: directory)
        // A directory, a dangling link or a file the node may not read in its place: the operator's to fix (2).
        guard let data = try SettingsFile.read(path) else { return WalletConfiguration() }
        return try parse(data, path: path)
    }

    /// Parses the JSON form; scores outside 1–5 and unknown recommendations are configuration errors.
    public static func parse(_ data: Data, path: String) throws(NodeError) -> WalletConfiguration {
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            throw NodeError(
                .config, "\(path) is not a wallet configuration", cause: DescribedError(decoding: error, of: data))
        }
        if let problem = StrictJSON.problem(in: data) { throw NodeError(.config, "\(path): \(problem)") }
        try checkKeys(data, path: path)
        var configuration = WalletConfiguration()
        if let account = file.walletAccountId {
            guard !account.isEmpty else { throw NodeError(.config, "\(path): walletAccountId is empty") }
            if let problem = identifierProblem(account) {
                throw NodeError(.config, "\(path): walletAccountId must be \(problem)")
            }
            configuration.walletAccountID = account
        }
        if let device = file.device {
            // Checked here rather than at the first add-card, which the TSP refused ("device.device_id is
            // required") with the node up and nothing said at its start.
            if let id = device.deviceId, let problem = identifierProblem(id) {
                throw NodeError(.config, "\(path): device.deviceId must be \(problem)")
            }
            for (name, value) in [
                ("deviceType", device.deviceType), ("deviceName", device.deviceName), ("osName", device.osName),
                ("osVersion", device.osVersion),
            ] {
                if let value, let problem = textProblem(value) {
                    throw NodeError(.config, "\(path): device.\(name) must be \(problem)")
                }
            }
            configuration.device.deviceID = device.deviceId ?? configuration.device.deviceID
            configuration.device.deviceType = device.deviceType ?? configuration.device.deviceType
            configuration.device.deviceName = device.deviceName ?? configuration.device.deviceName
            configuration.device.osName = device.osName ?? configuration.device.osName
            configuration.device.osVersion = device.osVersion ?? configuration.device.osVersion
        }
        if let name = file.provider {
            guard let provider = WalletProvider(rawValue: name) else {
                let names = WalletProvider.allCases.map(\.rawValue).joined(separator: ", ")
                throw NodeError(.config, "\(path): provider must be one of \(names), not \"\(name)\"")
            }
            configuration.provider = provider
        }
        if let risk = file.risk {
            for (name, score) in [("accountScore", risk.accountScore), ("deviceScore", risk.deviceScore)] {
                if let score, !(1...5).contains(score) || score.rounded() != score {
                    // A whole number too large for an integer would show as 1.8e+19, whose digits the log masks.
                    let shown =
                        score.rounded() != score ? "\(score)" : abs(score) < 1e15 ? "\(Int64(score))" : "too large"
                    throw NodeError(
                        .config, "\(path): risk.\(name) is \(shown); scores are whole numbers from 1 (lowest) to 5")
                }
            }
            configuration.risk.accountScore = risk.accountScore.map { UInt32($0) } ?? configuration.risk.accountScore
            configuration.risk.deviceScore = risk.deviceScore.map { UInt32($0) } ?? configuration.risk.deviceScore
            if let name = risk.recommendation {
                let known = CardV1.WalletRecommendation.knownCases.filter { $0 != .unspecified }
                guard let value = known.first(where: { $0.shortName == name.uppercased() }) else {
                    let names = known.map(\.shortName).joined(separator: ", ")
                    throw NodeError(.config, "\(path): risk.recommendation must be one of \(names)")
                }
                configuration.risk.recommendation = value
            }
        }
        return configuration
    }

    /// What is wrong with an identifier (a wallet account or device id), as a phrase after "must be"; nil when
    /// nothing is. Identifiers are shown in tables and log lines and sent to the TSP: a space, a line break or a
    /// page of text would break them, and `WalletSelection.UseAccount` refuses them the same way.
    public static func identifierProblem(_ value: String) -> String? {
        IdentifierRules.problem(value)
    }

    /// The same for a descriptive value (a device's name or type, its OS), which may hold spaces.
    static func textProblem(_ value: String) -> String? {
        IdentifierRules.problem(value, spaces: true)
    }

    /// The JSON shape of `wallet.json`.
    private struct File: Decodable {
        struct Device: Decodable {
            var deviceId: String?
            var deviceType: String?
            var deviceName: String?
            var osName: String?
            var osVersion: String?
        }
        struct Risk: Decodable {
            /// Read as any JSON number and checked above: as `UInt32`, a 2.5 or a -1 made the decoder say the file
            /// was "not valid JSON", naming no key.
            var accountScore: Double?
            var deviceScore: Double?
            var recommendation: String?
        }
        var walletAccountId: String?
        var device: Device?
        var risk: Risk?
        var provider: String?
    }
}

extension CardV1.WalletRecommendation {
    /// `APPROVE`, `REQUIRE_AUTHENTICATION`, `DECLINE`.
    var shortName: String {
        String((protoValueName ?? "").dropFirst("WALLET_RECOMMENDATION_".count))
    }
}
