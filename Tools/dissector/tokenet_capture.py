"""Reads a capture through tokenet-shark (tshark with tokenet.lua) and gives its Tokenet frames and the peers'
certificate identities as Python objects. Used by tokenet-diagram and check-dissector."""

import os
import subprocess
import xml.etree.ElementTree as ElementTree

HERE = os.path.dirname(os.path.abspath(__file__))


def endpoint(packet, end):
    """"host:port" of one end ("src" or "dst") of a packet, an IPv6 address in brackets as nodes print it."""
    host = packet.get("ip." + end)
    if host is None:
        host = "[%s]" % packet.get("ipv6." + end)
    return "%s:%s" % (host, packet.get("tcp.%sport" % end))


class Frame:
    """One Tokenet frame: the fields the dissector showed (name -> list of shown values, protobuf fields included),
    its packet's number, time, connection (tcp.stream) and endpoints."""

    def __init__(self, element, packet):
        self.summary = element.get("showname", "")
        self.fields = {}
        # The bytes each field points at, in hex, as PDML writes them (value=): what an export carries besides the
        # shown text, and must not hold a card number either.
        self.values = []
        for field in element.iter("field"):
            name = field.get("name")
            if name:
                self.fields.setdefault(name, []).append(field.get("show"))
            if field.get("value"):
                self.values.append(field.get("value"))
        self.packet = int(packet["frame.number"])
        self.time = float(packet.get("frame.time_relative", 0))
        self.connection = packet.get("tcp.stream")
        # The logical connection: set by `read` to the TLS session's client random when the capture has the
        # ClientHello, so that a connection seen twice (through a proxy that forwards its bytes) is one session.
        self.session = self.connection
        self.source = endpoint(packet, "src")
        self.destination = endpoint(packet, "dst")
        self.ports = {int(packet.get("tcp.srcport", 0)), int(packet.get("tcp.dstport", 0))}

    def get(self, name):
        values = self.fields.get(name)
        return values[0] if values else None


class Capture:
    def __init__(self, frames, identities, tls_connections=(), problem=None, opened=(), encrypted=(), carried=None):
        self.frames = frames
        # "address:port" -> the tokenet://ROLE/ID of the certificate that endpoint presented.
        self.identities = identities
        # The connections (tcp.stream) that began TLS with a ClientHello.
        self.tls_connections = set(tls_connections)
        # The connections whose SYN is in the capture, and those with TLS application data that showed no frame.
        self.opened = set(opened)
        self.encrypted = set(encrypted)
        # The connections whose TCP segments carry bytes that are neither TLS nor a Tokenet frame, and their ends.
        self.carried = dict(carried or {})
        # Why tshark stopped before the end of the file (a capture cut short or damaged), or None: the frames are
        # the ones before that point.
        self.problem = problem

    def unread_tls_connections(self):
        """The TLS connections that show no Tokenet frame: the key log has no secrets for them (or they ended
        before their first frame, or carry something else)."""
        return self.tls_connections - {frame.connection for frame in self.frames}

    def connections_begun_before(self):
        """The TLS connections opened before the capture began (neither their SYN nor their ClientHello is in it):
        without the ClientHello the key log's secrets cannot be matched to them, so none of their calls show. Nodes
        keep their connections to each other open, so a capture started after the nodes misses those calls."""
        shown = {frame.connection for frame in self.frames}
        return self.encrypted - self.opened - self.tls_connections - shown

    def unread_plaintext_connections(self):
        """The connections that carry bytes in the clear and show no Tokenet frame, by their two ends: a
        plaintext-mode connection whose hello is not in the capture (made before it began) is not found by its
        content, and its calls were left out of the diagram without a word. One opened within the capture (its SYN
        in it) would show its hello, so it is some other protocol's (HTTP, a database's) and not counted."""
        shown = {frame.connection for frame in self.frames}
        skipped = shown | self.tls_connections | self.encrypted | self.opened
        return {stream: ends for stream, ends in self.carried.items() if stream not in skipped}


# What tshark says of a file that it read only in part; the packets before that point are in its output.
CUT_SHORT = ("appears to have been cut short", "appears to be damaged or corrupt")


def tshark_message(stderr):
    """tshark's complaint without the lines that say nothing about the capture."""
    lines = [line for line in stderr.strip().splitlines() if line and not line.startswith("Running as user")]
    return "\n".join(lines)[-2000:]


def read(pcap, keylog=None, plaintext_ports=()):
    """Dissects `pcap` (with the TLS secrets in `keylog`, when given, and `plaintext_ports` decoded as plaintext-mode
    Tokenet whatever their first bytes) and returns its Capture. Raises RuntimeError
    with tshark's message when tshark fails, unless the file is only cut short (Capture.problem says so)."""
    arguments = [
        os.path.join(HERE, "tokenet-shark"), "-r", pcap, "-T", "pdml",
        "-Y", "tokenet || x509ce.uniformResourceIdentifier || tls.handshake.type == 1"
        " || (tcp.flags.syn == 1 && tcp.flags.ack == 0) || (tls.record.content_type == 23 && !tokenet)"
        " || (tcp.len > 0 && !tls && !tokenet)",
    ]
    if keylog:
        arguments[1:1] = ["--keylog", keylog]
    if plaintext_ports:
        # Decoded by port, since a connection whose hello is not in the capture is not found by its content.
        arguments += ["-o", "tokenet.plaintext_ports:" + ",".join(str(port) for port in plaintext_ports)]
    environment = dict(os.environ)
    environment.pop("SSLKEYLOGFILE", None)
    result = subprocess.run(arguments, capture_output=True, text=True, env=environment, timeout=600)
    message = tshark_message(result.stderr)
    problem = None
    if result.returncode != 0:
        # A capture whose writer was stopped mid-packet (dumpcap killed, a disk full, a file still being written)
        # still holds every packet before that point, and tshark has written them whole.
        cut = [line for line in message.splitlines() if any(words in line for words in CUT_SHORT)]
        if not cut:
            raise RuntimeError(message.removeprefix("tokenet-shark: ") or "tokenet-shark failed")
        # Only tshark's line: tokenet-shark's own notes (an empty key log) are the diagram's to word.
        problem = cut[0].removeprefix("tshark: ")
    try:
        packets = ElementTree.fromstring(result.stdout).iter("packet")
    except ElementTree.ParseError as error:
        raise RuntimeError("tshark's output cannot be read (%s): %s" % (error, message))
    frames, identities, sessions, opened, encrypted, carried = [], {}, {}, set(), set(), {}
    for element in packets:
        packet = {}
        for proto in element.iter("proto"):
            if proto.get("name") in ("frame", "ip", "ipv6", "tcp"):
                for field in proto.iter("field"):
                    packet.setdefault(field.get("name"), field.get("show"))
        if packet.get("tcp.flags.syn") == "1" and packet.get("tcp.flags.ack") == "0":
            opened.add(packet.get("tcp.stream"))
        if any(
            field.get("name") == "tls.record.content_type" and field.get("show") == "23"
            for field in element.iter("field")
        ):
            encrypted.add(packet.get("tcp.stream"))
        names = {proto.get("name") for proto in element.iter("proto")}
        if int(packet.get("tcp.len") or 0) > 0 and not names & {"tls", "tokenet"}:
            carried.setdefault(packet.get("tcp.stream"), (endpoint(packet, "src"), endpoint(packet, "dst")))
        for proto in element.iter("proto"):
            if proto.get("name") == "tokenet":
                frames.append(Frame(proto, packet))
        for proto in element.iter("proto"):
            if proto.get("name") != "tls":
                continue
            shown = {}
            for field in proto.iter("field"):
                shown.setdefault(field.get("name"), field.get("show"))
            if shown.get("tls.handshake.type") == "1" and shown.get("tls.handshake.random"):
                sessions.setdefault(packet.get("tcp.stream"), shown["tls.handshake.random"])
        uris = [
            field.get("show") for field in element.iter("field")
            if field.get("name") == "x509ce.uniformResourceIdentifier"
            and (field.get("show") or "").startswith("tokenet://")
        ]
        if uris:
            source = endpoint(packet, "src")
            # The first certificate of a chain is the endpoint's own.
            identities.setdefault(source, uris[0])
    for frame in frames:
        frame.session = sessions.get(frame.connection, frame.connection)
    return Capture(frames, identities, sessions.keys(), problem, opened, encrypted, carried)
