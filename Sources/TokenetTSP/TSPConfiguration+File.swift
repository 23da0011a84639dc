import TokenetNode

extension TSPConfiguration {
    /// The optional policy file in the data directory; without it the defaults apply.
    public static let fileName = "tsp-policy.json"

    /// The keys the policy file may hold, each optional:
    /// `issuer_deadline_ms`, `stand_in_max_score` (0 = always decline), `terms_required` (false = no T&C),
    /// `eligibility_receipt_ttl_s`, `push_receipt_ttl_s`, `push_session_ttl_s`; notifications:
    /// `notification_max_age_s`, `notification_max_queued`, `notification_max_queued_bytes`; one-time codes:
    /// `otp_validity_ms`
    /// (how long a code lives), `otp_max_attempts` (tries per code), `otp_max_resends`, `otp_codes_per_card_per_day`
    /// (codes one card gets in 24 hours across its tokens); `step_up_ttl_s` (how long
    /// a stepped-up token waits for ID&V); `authn_ttl_s` (how long a payment's AUTHN waits for the cardholder);
    /// strong authentication:
    /// `access_token_ttl_s`, `activation_code_ttl_s`, `activation_max_attempts`, `hotp_digits` (6 or 8),
    /// `hotp_look_ahead`, `hotp_resync_window` (larger than the look-ahead), `hotp_max_failures`, `auth_server_url`
    /// (the server put in activation links).
    static let fileKeys: Set<String> = [
        "issuer_deadline_ms", "stand_in_max_score", "terms_required", "eligibility_receipt_ttl_s",
        "push_receipt_ttl_s", "push_session_ttl_s", "notification_max_age_s", "notification_max_queued",
        "notification_max_queued_bytes",
        "otp_validity_ms", "otp_max_attempts", "otp_max_resends", "otp_codes_per_card_per_day", "step_up_ttl_s",
        "authn_ttl_s",
        "access_token_ttl_s", "activation_code_ttl_s", "activation_max_attempts", "hotp_digits", "hotp_look_ahead",
        "hotp_resync_window", "hotp_max_failures", "auth_server_url",
    ]

    /// The defaults changed by `<dataDirectory>/tsp-policy.json` when it exists. Unknown keys, wrong types and a key
    /// given twice are configuration errors, so a typo never silently falls back to a default.
    public static func load(dataDirectory: String) throws(NodeError) -> TSPConfiguration {
        guard let file = try PolicyFile.read(fileName, dataDirectory: dataDirectory, keys: fileKeys) else {
            return TSPConfiguration()
        }
        let path = file.path
        var configuration = TSPConfiguration()
        if let value = try file.number("issuer_deadline_ms", in: 1...600_000) {
            configuration.issuerDeadline = .milliseconds(value)
        }
        if let value = try file.number("stand_in_max_score", in: 0...5) {
            configuration.standIn = StandInPolicy(maximumApprovedScore: UInt32(value))
        }
        if let value = try file.number("eligibility_receipt_ttl_s", in: 1...86_400) {
            configuration.eligibilityReceiptTTL = .seconds(value)
        }
        if let value = try file.number("push_receipt_ttl_s", in: 1...86_400) {
            configuration.pushReceiptTTL = .seconds(value)
        }
        if let value = try file.number("push_session_ttl_s", in: 1...86_400) {
            configuration.pushSessionTTL = .seconds(value)
        }
        if let value = try file.number("notification_max_age_s", in: 1...(365 * 86_400)) {
            configuration.notificationRetention.maxAge = .seconds(value)
        }
        if let value = try file.number("notification_max_queued", in: 1...10_000_000) {
            configuration.notificationRetention.maxQueued = value
        }
        // At least one message of the largest size the broker takes.
        let largestMessage = NotificationBroker.maximumMessageBytes
        if let value = try file.number("notification_max_queued_bytes", in: largestMessage...(1 << 40)) {
            configuration.notificationRetention.maxQueuedBytes = value
        }
        if let value = try file.number("otp_validity_ms", in: 1...86_400_000) {
            configuration.otpValidity = .milliseconds(value)
        }
        if let value = try file.number("otp_max_attempts", in: 1...10) { configuration.otpMaxAttempts = value }
        if let value = try file.number("otp_max_resends", in: 0...10) { configuration.otpMaxResends = value }
        if let value = try file.number("otp_codes_per_card_per_day", in: 1...1000) {
            configuration.otpCodesPerCardPerDay = value
        }
        if let value = try file.number("step_up_ttl_s", in: 60...(365 * 86_400)) {
            configuration.stepUpValidity = .seconds(value)
        }
        if let value = try file.number("authn_ttl_s", in: 1...86_400) {
            configuration.authnLifetime = .seconds(value)
        }
        if let value = try file.number("access_token_ttl_s", in: 1...86_400) {
            configuration.accessTokenLifetime = .seconds(value)
        }
        if let value = try file.number("activation_code_ttl_s", in: 1...604_800) {
            configuration.activationCodeValidity = .seconds(value)
        }
        if let value = try file.number("activation_max_attempts", in: 1...100) {
            configuration.activationMaxAttempts = value
        }
        if let value = try file.number("hotp_digits", in: 6...8) {
            guard value != 7 else { throw NodeError(.config, "\(path): \"hotp_digits\" must be 6 or 8") }
            configuration.hotpDigits = value
        }
        if let value = try file.number("hotp_look_ahead", in: 1...1000) { configuration.hotpLookAhead = value }
        if let value = try file.number("hotp_resync_window", in: 2...10_000) { configuration.hotpResyncWindow = value }
        if let value = try file.number("hotp_max_failures", in: 1...1000) { configuration.hotpMaxFailures = value }
        guard configuration.hotpResyncWindow > configuration.hotpLookAhead else {
            throw NodeError(.config, "\(path): \"hotp_resync_window\" must be larger than \"hotp_look_ahead\"")
        }
        if let flag = try file.flag("terms_required"), !flag { configuration.terms = .none }
        let url = try file.string("auth_server_url", expected: "a URL such as \"tokenet://tsp.example:7001\"") {
            !$0.isEmpty && !$0.contains(where: \.isWhitespace) && $0.contains("://")
        }
        if let url { configuration.authServerURL = url }
        return configuration
    }
}
