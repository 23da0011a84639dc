"""A Tokenet client in Python, written from Protos/README.md and the .proto files alone.

It shares no code with Tokenet's Swift runtime: TLS comes from Python's `ssl` module, messages from the protobuf
classes `protoc --python_out` makes from Protos/. `Tools/interop/check-python-client` runs it against live nodes,
which checks that the specification is enough to talk to Tokenet; a party written in another language can start
from the same few steps:

    messages = load_messages("Protos")
    with Connection.open("127.0.0.1", 40111, cert="operator.pem", key="operator.key", ca="ca.pem") as conn:
        health = messages["tokenet.health.v1.health_pb2"]
        call = conn.unary("/tokenet.health.v1.Health/Check", health.HealthCheckRequest())
        print(call.status.code, health.HealthCheckResponse.FromString(call.responses[0]).status)

The client is synchronous and single-threaded: it sends a call's frames and reads frames until the call's status,
keeping frames of other calls for later, answering pings and granting window as the specification asks.
"""

import importlib
import os
import secrets
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

# The protocol version this client speaks (Protos/README.md, section 4).
PROTOCOL_VERSION = 1
# The defaults a zero setting stands for (section 4).
DEFAULT_MAX_FRAME_SIZE = 4 * 1024 * 1024
DEFAULT_WINDOW = 1024 * 1024

_wire = None


def load_messages(protos_dir):
    """Compiles every .proto under `protos_dir` with `protoc --python_out` into a temporary directory and returns the
    generated modules by name, such as `tokenet.health.v1.health_pb2`. Every module is imported before the directory
    is removed, so nothing is left behind even by a process that ends on a signal (atexit handlers do not run then)."""
    out = tempfile.mkdtemp(prefix="tokenet-python-client-")
    try:
        return _compile_and_import(protos_dir, out)
    finally:
        shutil.rmtree(out, True)
        if out in sys.path:
            sys.path.remove(out)


def _compile_and_import(protos_dir, out):
    global _wire
    files = sorted(
        os.path.relpath(os.path.join(directory, name), protos_dir)
        for directory, _, names in os.walk(protos_dir)
        for name in names
        if name.endswith(".proto")
    )
    # /usr/include holds google/protobuf/descriptor.proto, which the options file imports.
    result = subprocess.run(
        ["protoc", "--python_out=" + out, "-I" + protos_dir, "-I/usr/include"] + files,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError("protoc failed: " + result.stderr.strip())
    sys.path.insert(0, out)
    modules = {}
    for file in files:
        name = file[: -len(".proto")].replace(os.sep, ".") + "_pb2"
        modules[name] = importlib.import_module(name)
    _wire = modules["tokenet.wire.v1.frame_pb2"]
    return modules


class ProtocolError(Exception):
    """The peer broke the protocol, or the connection ended before the answer came."""


class Call:
    """One call: the response messages (serialized), its status frame, and the trailers."""

    def __init__(self, stream_id, streaming):
        self.stream_id = stream_id
        self.streaming = streaming
        self.responses = []
        self.status = None


class Connection:
    """A Tokenet connection: TLS 1.3 with a client certificate, then the hello exchange (section 4)."""

    def __init__(self, sock, window, max_frame_size):
        self.sock = sock
        self.window = window or DEFAULT_WINDOW
        self.max_frame_size = max_frame_size or DEFAULT_MAX_FRAME_SIZE
        self.buffer = bytearray()
        self.next_stream_id = 1
        self.calls = {}
        self.goaway = None
        self.server_hello = None
        self.pongs = []
        self.pings_received = 0
        self.peer_identity = None

    @classmethod
    def open(
        cls, host, port, cert, key, ca, window=0, max_frame_size=0, version=PROTOCOL_VERSION, hello=True,
        send_hello=True,
    ):
        """Connects, checks that the server's certificate names a Tokenet role (URI SAN tokenet://ROLE/ID), sends
        this side's hello (unless `send_hello` is false) and, unless `hello` is false, waits for the server's."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        context.load_verify_locations(ca)
        context.load_cert_chain(cert, key)
        # The identity is the URI SAN, checked below; the host name plays no part (section 1).
        context.check_hostname = False
        raw = socket.create_connection((host, port), timeout=15)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock = context.wrap_socket(raw)
        connection = cls(sock, window, max_frame_size)
        uris = [value for kind, value in sock.getpeercert().get("subjectAltName", ()) if kind == "URI"]
        tokenet = [uri for uri in uris if uri.startswith("tokenet://")]
        if len(tokenet) != 1:
            sock.close()
            raise ProtocolError("the server's certificate names no single tokenet:// identity: %r" % (uris,))
        connection.peer_identity = tokenet[0]
        if not send_hello:
            return connection
        settings = _wire.Settings(initial_stream_window=window, max_frame_size=max_frame_size)
        connection.send(
            _wire.Frame(
                stream_id=0,
                hello=_wire.Hello(protocol_version=version, settings=settings, agent="tokenet-python-client/1"),
            )
        )
        if hello:
            frame = connection.read_frame()
            if frame.WhichOneof("kind") != "hello":
                raise ProtocolError("the server's first frame is %s, not hello" % frame.WhichOneof("kind"))
            connection.server_hello = frame.hello
        return connection

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def close(self):
        """Ends TLS with close_notify (the server then knows the close was meant), then closes the socket."""
        try:
            self.sock.settimeout(2)
            self.sock.unwrap().close()
        except (OSError, ValueError):
            self.sock.close()

    @property
    def initial_stream_window(self):
        """How many message bytes this side may send on a call before the server grants more (section 7)."""
        window = self.server_hello.settings.initial_stream_window if self.server_hello else 0
        return window or DEFAULT_WINDOW

    @property
    def max_concurrent_streams(self):
        """How many calls the server lets this side have open at once (section 7); 100 when it says 0."""
        limit = self.server_hello.settings.max_concurrent_streams if self.server_hello else 0
        return limit or 100

    # Framing (section 2).

    def send(self, *frames):
        """Writes the frames in one write, each behind its 4-byte big-endian length."""
        data = bytearray()
        for frame in frames:
            body = frame.SerializeToString()
            data += struct.pack(">I", len(body)) + body
        self.sock.sendall(bytes(data))

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self, count):
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ProtocolError("the server closed the connection")
            self.buffer += chunk

    def read_frame(self):
        """The next frame, whatever its stream. The length is checked before the body is read (section 2)."""
        self._fill(4)
        (length,) = struct.unpack(">I", self.buffer[:4])
        if length > self.max_frame_size:
            raise ProtocolError("a frame of %d bytes is above this side's limit" % length)
        self._fill(4 + length)
        body = bytes(self.buffer[4 : 4 + length])
        del self.buffer[: 4 + length]
        return _wire.Frame.FromString(body)

    def closed_by_peer(self):
        """True once the server has closed the connection (after its goaway, for example)."""
        try:
            while True:
                self.read_frame()
        except (ProtocolError, OSError, ssl.SSLError):
            return True

    # Calls (section 6).

    def start(self, method, requests, metadata=(), timeout_micros=None, streaming=False, half_close=True):
        """Opens a call on the next odd stream id and sends its requests (serialized messages or protobuf
        messages) and, unless told not to, its half-close, all in one write."""
        stream_id = self.next_stream_id
        self.next_stream_id += 2
        start = _wire.CallStart(method=method)
        for key, value in metadata:
            if isinstance(value, bytes):
                start.metadata.add(key=key, binary=value)
            else:
                start.metadata.add(key=key, text=value)
        if timeout_micros is not None:
            start.timeout_micros = timeout_micros
        frames = [_wire.Frame(stream_id=stream_id, call_start=start)]
        for request in requests:
            data = request if isinstance(request, bytes) else request.SerializeToString()
            frames.append(_wire.Frame(stream_id=stream_id, message=_wire.Message(data=data)))
        if half_close:
            frames.append(_wire.Frame(stream_id=stream_id, half_close=_wire.HalfClose()))
        self.send(*frames)
        call = Call(stream_id, streaming)
        self.calls[stream_id] = call
        return call

    def cancel(self, call, reason="the client gave up"):
        self.send(_wire.Frame(stream_id=call.stream_id, cancel=_wire.Cancel(reason=reason)))
        self.calls.pop(call.stream_id, None)

    def unary(self, method, request, **options):
        call = self.start(method, [request], **options)
        return self.finish(call)

    def finish(self, call):
        """Reads until `call` has its status; frames of other calls are kept on their calls."""
        while call.status is None:
            self.step()
        return call

    def next_response(self, call):
        """The next response message of a streaming call, or None once its status came."""
        while not call.responses and call.status is None:
            self.step()
        return call.responses.pop(0) if call.responses else None

    def pump(self, seconds):
        """Reads and acts on frames for `seconds` (answering pings), or until the server closes the connection."""
        end = time.monotonic() + seconds
        try:
            while (left := end - time.monotonic()) > 0:
                self.sock.settimeout(left)
                try:
                    self.step()
                except (socket.timeout, TimeoutError):
                    break
                except (ProtocolError, ssl.SSLError, OSError):
                    # The server closed the connection; `goaway` says why, if it said.
                    break
        finally:
            self.sock.settimeout(15)

    def ping(self, payload):
        self.send(_wire.Frame(stream_id=0, ping=_wire.Ping(payload=payload)))
        while payload not in self.pongs:
            self.step()

    def _send_best_effort(self, frame):
        """An answer to what was read (a pong, a window grant): a server that has closed meanwhile needs none, and
        the frames still unread (its goaway among them) say why it closed."""
        try:
            self.send(frame)
        except (ssl.SSLError, OSError):
            pass

    def step(self):
        """Reads one frame and acts on it as the specification says."""
        frame = self.read_frame()
        kind = frame.WhichOneof("kind")
        if frame.stream_id == 0:
            if kind == "ping":
                self.pings_received += 1
                self._send_best_effort(_wire.Frame(stream_id=0, pong=_wire.Pong(payload=frame.ping.payload)))
            elif kind == "pong":
                self.pongs.append(frame.pong.payload)
            elif kind == "goaway":
                self.goaway = frame.goaway
                # Calls above the last processed id were never processed (section 9).
                for stream_id, call in list(self.calls.items()):
                    if stream_id > frame.goaway.last_stream_id and call.status is None:
                        call.status = _wire.Status(code=_wire.UNAVAILABLE, message=frame.goaway.reason)
            return
        call = self.calls.get(frame.stream_id)
        if call is None:
            # It may have crossed this side's cancel on the wire (section 5).
            return
        if kind == "message":
            call.responses.append(frame.message.data)
            if call.streaming:
                # This side consumes each message as it arrives, so it grants its bytes back at once (section 7).
                increment = len(frame.message.data)
                if increment > 0:
                    self._send_best_effort(
                        _wire.Frame(
                            stream_id=call.stream_id, window_update=_wire.WindowUpdate(increment=increment)
                        )
                    )
        elif kind == "status":
            call.status = frame.status
            del self.calls[frame.stream_id]


def trace_id():
    """A trace id as section 6 asks: lowercase hex with at least one letter."""
    while True:
        value = secrets.token_hex(8)
        if any(c in "abcdef" for c in value):
            return value
