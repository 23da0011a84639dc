import Foundation

/// Parses a node's command line.
///
/// Accepted forms are `--flag value`, `--flag=value` and bare `--plaintext`, `--help` (or `-h`), `--version`. A value
/// may not start with `--`, so `--listen --plaintext` reports the missing value instead of listening on "--plaintext".
public enum NodeCommandLine {
    /// `path` with its links followed and `.` and `..` taken out, to tell two names of one file from two files.
    static func resolved(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// Turns arguments (without the program name) into a command; `readFile` supplies the `--config` file's bytes.
    public static func parse(
        _ arguments: [String], spec: NodeSpec, readFile: (String) throws(NodeError) -> Data = NodeConfigFile.read
    ) throws(NodeError) -> NodeCommand {
        let keys = NodeOptionKey.keys(for: spec)
        var flagSettings: [NodeSetting] = []
        var configPath: String?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            // `-h`, as the CLI takes it: "unexpected argument '-h'" answered a person asking for help.
            if argument == "-h" { return .help }
            guard argument.hasPrefix("--"), argument.count > 2 else {
                // One dash, as Go tools take options: named with the option meant.
                let single = argument.dropFirst().prefix { $0 != "=" }
                if argument.hasPrefix("-"), keys.contains(where: { $0.rawValue == single }) {
                    throw NodeError(
                        .usage, "unknown option '\(NodeError.shown(argument))'; did you mean --\(single)?")
                }
                throw NodeError(.usage, "unexpected argument '\(NodeError.shown(argument))'")
            }
            let body = argument.dropFirst(2)
            let equals = body.firstIndex(of: "=")
            let name = String(equals.map { body[..<$0] } ?? body)
            let inlineValue = equals.map { String(body[body.index(after: $0)...]) }
            guard let key = keys.first(where: { $0.rawValue == name }) else {
                let hint =
                    NodeOptionKey(rawValue: name).map { known in
                        known.peer != nil ? " (\(spec.name) has no \(name) peer)" : " (\(spec.name) does not use it)"
                    } ?? ""
                throw NodeError(.usage, "unknown option '--\(NodeError.shown(name))'\(hint)")
            }
            guard key.takesValue else {
                switch key {
                case .help, .version:
                    if inlineValue != nil { throw NodeError(.usage, "\(key.flag) takes no value") }
                    return key == .help ? .help : .version
                default:
                    // `--plaintext=false` turns off what a config file turned on: flags override the file, and a
                    // bare flag could only ever say yes.
                    let on: Bool
                    switch inlineValue {
                    case nil, "true": on = true
                    case "false": on = false
                    case let other?:
                        throw NodeError(.usage, "\(key.flag): expected no value, true or false, got '\(other)'")
                    }
                    let setting = NodeSetting(key: key, value: .bool(on), origin: .flag)
                    try refuseRepeat(of: setting, in: flagSettings, spec: spec)
                    flagSettings.append(setting)
                }
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                    throw NodeError(.usage, "\(key.flag) needs a value (\(key.placeholder(for: spec)))")
                }
                value = arguments[index]
                index += 1
            }
            if key == .config {
                guard !value.isEmpty else { throw NodeError(.usage, "--config needs a file path") }
                // Not the last one wins, as for other flags: a whole file, its mistakes with it, went unread.
                if let first = configPath, Self.resolved(first) != Self.resolved(value) {
                    throw NodeError(
                        .usage,
                        "--config is given twice (\(first), \(value)): a node reads one config file; merge them, or "
                            + "give the second one's settings as flags")
                }
                configPath = value
            } else {
                let setting = NodeSetting(key: key, value: .string(value), origin: .flag)
                try refuseRepeat(of: setting, in: flagSettings, spec: spec)
                flagSettings.append(setting)
            }
        }

        var options = NodeOptions()
        var configSettings: [NodeSetting] = []
        if let configPath {
            configSettings = try NodeConfigFile.settings(from: readFile(configPath), path: configPath, spec: spec)
        }
        for setting in configSettings + flagSettings {
            try options.apply(setting)
        }
        if !options.issuerRoutes.isEmpty && !spec.routesIssuersByID {
            throw NodeError(.usage, "--issuer ID=HOST:PORT is for tsp-node; \(spec.name) takes --issuer HOST:PORT")
        }
        try refuseRepeatedIssuerIDs(configSettings)
        try refuseRepeatedIssuerIDs(flagSettings)
        // Messages about settings wrong together name each as it was given: `--plaintext`, or `"plaintext" in
        // node.json` for one the person did not type.
        var labels: [NodeOptionKey: NodeSetting] = [:]
        for setting in configSettings + flagSettings { labels[setting.key] = setting }
        try options.validate { key in labels[key]?.label ?? key.flag }
        if let source = labels[.plaintext] { options.plaintextSource = source.label }
        return .run(options)
    }

    /// A flag given twice takes its last value, so that a script can add its own after a common set; but
    /// `--issuer` is repeatable (`ID=HOST:PORT` once for each issuer), and a second `--issuer HOST:PORT` reads as a
    /// second issuer where the node would call only it and drop the first without a word.
    private static func refuseRepeat(
        of setting: NodeSetting, in earlier: [NodeSetting], spec: NodeSpec
    ) throws(NodeError) {
        guard setting.key == .issuer, !setting.isIssuerRoute,
            let first = earlier.first(where: { $0.key == .issuer && !$0.isIssuerRoute })
        else { return }
        // Routes by issuer id are the TSP's; another node calls one issuer node, and "name each issuer with
        // ID=HOST:PORT" sent a wallet's operator to a form the wallet refuses.
        guard spec.routesIssuersByID else {
            throw NodeError(
                .usage,
                "--issuer HOST:PORT may be given once: \(spec.name) calls one issuer node; it was given "
                    + "\(first.valueText) and \(setting.valueText)")
        }
        throw NodeError(
            .usage,
            "--issuer HOST:PORT (the address of the issuers no ID= names) may be given once; it was given "
                + "\(first.valueText) and \(setting.valueText). Name each issuer with --issuer ID=HOST:PORT")
    }

    /// One source (the command line, or the config file's list) may give an issuer id one address: of two, the
    /// node would call only the last, and the other would be dropped without a word. A route on the command line
    /// for an id the config file routes replaces it, as flags override the file.
    private static func refuseRepeatedIssuerIDs(_ settings: [NodeSetting]) throws(NodeError) {
        var routes: [String: String] = [:]
        var fallback: String?
        for setting in settings where setting.key == .issuer {
            guard case .string(let text) = setting.value else { continue }
            // The last "=", as the route is read: an issuer id may hold one.
            guard let equals = text.lastIndex(of: "=") else {
                // A config file's list may hold one address without an id, as the command line may.
                if let fallback, setting.origin != .flag {
                    throw NodeError(
                        .config,
                        "\(setting.label): HOST:PORT without an id is the address of the issuers no ID= names, and "
                            + "is given twice, \(fallback) and \(text); give it once")
                }
                fallback = text
                continue
            }
            let id = String(text[..<equals])
            let address = String(text[text.index(after: equals)...])
            guard let earlier = routes.updateValue(address, forKey: id) else { continue }
            throw NodeError(
                setting.origin == .flag ? .usage : .config,
                "\(setting.label): issuer \"\(id)\" is given two addresses, \(earlier) and \(address); give each issuer "
                    + "id once")
        }
    }
}
