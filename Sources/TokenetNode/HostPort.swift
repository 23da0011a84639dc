import Glibc
import TokenetTransport

/// A `HOST:PORT` address as written on the command line, in config files and in ready files.
///
/// IPv6 literals are bracketed (`[::1]:7001`) so the last colon always separates the port.
public struct HostPort: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[IPV6]:PORT`; returns nil for anything else, including an empty host.
    public init?(parsing text: String) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") { return nil }
        }
        guard !hostPart.isEmpty, !hostPart.contains(where: \.isWhitespace) else { return nil }
        guard !portPart.isEmpty, portPart.allSatisfy(\.isASCII), portPart.allSatisfy(\.isNumber),
            portPart.count <= 5, let port = UInt16(portPart)
        else { return nil }
        self.host = String(hostPart)
        self.port = port
    }

    /// The port of `text` when it is written in digits but lies past 65535 (`127.0.0.1:70001`), which `init(parsing:)`
    /// refuses like text of no address form at all: messages then name the port as the mistake.
    public static func portPastRange(in text: String) -> Substring? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let port = text[text.index(after: colon)...]
        guard !port.isEmpty, port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return port.drop { $0 == "0" }.count > 5 || (Int(port) ?? .max) > Int(UInt16.max) ? port : nil
    }

    /// Whether the host is an IP address (an IPv4 dotted quad, or an IPv6 address written in brackets) or
    /// `localhost`: what a listener binds to (a node's or the fault proxy's `--listen`; no name is looked up there).
    /// Checked where an address is given, so `tsp:7001` there is a bad option naming its flag rather than a failure
    /// once the node runs.
    public var hostIsIPOrLocalhost: Bool {
        if host == "localhost" { return true }
        var four = in_addr()
        var six = in6_addr()
        return inet_pton(AF_INET, host, &four) == 1 || inet_pton(AF_INET6, host, &six) == 1
    }

    /// Whether a connection can be made to the host: an IP address, `localhost`, or a host name, which the
    /// transport looks up when it connects (`HostResolver`).
    public var hostIsIPOrName: Bool {
        hostIsIPOrLocalhost || HostResolver.isHostName(host)
    }

    /// Why an address is refused when it is an IPv6 address with a zone (`[fe80::1%eth0]:7001`, the interface a
    /// link-local address is reached through): the sockets take addresses without one, and the message about an
    /// address of no known form did not say that the zone was the part in the way. Nil for any other host.
    public var zoneRefusal: String? {
        guard let percent = host.firstIndex(of: "%") else { return nil }
        var six = in6_addr()
        guard inet_pton(AF_INET6, String(host[..<percent]), &six) == 1 else { return nil }
        return "names the IPv6 zone \(host[percent...]), and Tokenet takes addresses without one: give a global or "
            + "loopback IPv6 address, such as [::1]:\(port), or an IPv4 one"
    }

    /// Why the host cannot be listened on, when it is an address that takes no connections: an IPv4 multicast
    /// (224.0.0.0/4) or the broadcast address, an IPv6 multicast (ff00::/8), or an IPv6 link-local address
    /// (fe80::/10), which needs the zone Tokenet does not take. The first two bound and printed READY, and nothing
    /// could connect; the others failed with "Invalid argument". Nil for any other host.
    public var listenRefusal: String? {
        var four = in_addr()
        var six = in6_addr()
        if inet_pton(AF_INET, host, &four) == 1 {
            let first = UInt8(UInt32(bigEndian: four.s_addr) >> 24)
            if (224...239).contains(first) { return "\(host) is a multicast address, which takes no connections" }
            if four.s_addr == UInt32.max { return "\(host) is the broadcast address, which takes no connections" }
            return nil
        }
        guard inet_pton(AF_INET6, host, &six) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: six) { Array($0) }
        // An IPv4 address written as IPv6 (::ffff:224.0.0.1) is that IPv4 address.
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            if (224...239).contains(bytes[12]) { return "\(host) is a multicast address, which takes no connections" }
            if bytes[12...].allSatisfy({ $0 == 0xFF }) {
                return "\(host) is the broadcast address, which takes no connections"
            }
            return nil
        }
        let (first, second) = (bytes[0], bytes[1])
        if first == 0xFF { return "\(host) is a multicast address, which takes no connections" }
        if first == 0xFE, second & 0xC0 == 0x80 {
            return "\(host) is a link-local address, which needs an interface (a zone) that Tokenet does not take"
        }
        return nil
    }

    /// Whether the host is the unspecified address (0.0.0.0 or ::): what a node listens on to take connections on
    /// every interface, but no peer's address. On its own machine it reaches the loopback; from another machine,
    /// nothing.
    public var hostIsUnspecified: Bool {
        var four = in_addr()
        var six = in6_addr()
        if inet_pton(AF_INET, host, &four) == 1 { return four.s_addr == 0 }
        guard inet_pton(AF_INET6, host, &six) == 1 else { return false }
        return withUnsafeBytes(of: six) { $0.allSatisfy { $0 == 0 } }
    }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
