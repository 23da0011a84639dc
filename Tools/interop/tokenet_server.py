"""The server side of the Tokenet protocol in Python, written from Protos/README.md alone.

It shares no code with Tokenet's Swift runtime: TLS comes from Python's `ssl` module, messages from the classes
`tokenet_client.load_messages` makes with `protoc --python_out`. Two layers:

- `FrameSocket`: the framing of section 2 on one socket (a length prefix checked before the body is read).
- `UnaryServer`: a server of unary methods over mutual TLS. Each accepted connection gets its own thread: the hello
  exchange (section 4), pings answered (section 9), calls opened on odd, increasing ids (section 5), the peer's role
  checked against the method's allowed roles, the request decoded, the handler run and its answer sent as
  `message` + `status(OK)`, or as `status(code)` alone (section 6), and a goaway on SIGTERM (section 9).

`Tools/interop/python-issuer` serves an issuer's methods with it; `Tools/interop/python-server` uses the framing.
"""

import socket
import ssl
import struct
import sys
import threading
import time
import traceback

import tokenet_client as tc


class FrameSocket:
    """Frames on one (TLS) socket: a 4-byte big-endian length, then a serialized tokenet.wire.v1.Frame."""

    def __init__(self, sock, wire, max_frame_size=tc.DEFAULT_MAX_FRAME_SIZE):
        self.sock = sock
        self.wire = wire
        self.max_frame_size = max_frame_size
        self.buffer = bytearray()
        self.send_lock = threading.Lock()

    def send(self, *frames):
        """Writes the frames in one write; safe from several threads."""
        data = bytearray()
        for frame in frames:
            body = frame.SerializeToString()
            data += struct.pack(">I", len(body)) + body
        with self.send_lock:
            self.sock.sendall(bytes(data))

    def read_frame(self):
        """The next frame. EOFError when the peer closed; tc.ProtocolError for a length above the limit, checked
        before the body is read."""
        while len(self.buffer) < 4:
            self._recv()
        (length,) = struct.unpack(">I", self.buffer[:4])
        if length > self.max_frame_size:
            raise tc.ProtocolError("a frame of %d bytes" % length)
        while len(self.buffer) < 4 + length:
            self._recv()
        body = bytes(self.buffer[4 : 4 + length])
        del self.buffer[: 4 + length]
        return self.wire.Frame.FromString(body)

    def _recv(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError()
        self.buffer += chunk


def server_context(cert, key, ca):
    """TLS 1.3 that demands a client certificate signed by the deployment's CA (section 1)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(cert, key)
    context.load_verify_locations(ca)
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def peer_identity(sock):
    """The peer's `tokenet://ROLE/ID` URI SAN, or None when its certificate names no single one."""
    uris = [value for kind, value in (sock.getpeercert() or {}).get("subjectAltName", ()) if kind == "URI"]
    tokenet = [uri for uri in uris if uri.startswith("tokenet://")]
    return tokenet[0] if len(tokenet) == 1 else None


class RpcError(Exception):
    """A handler's refusal: ends the call with `status(code, message)` (a `tokenet.wire.v1.StatusCode` name)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class Method:
    """A unary method: its request type, the roles allowed to call it (the .proto's `allowed_roles`; empty: any
    authenticated peer) and `handler(request, context) -> response`."""

    def __init__(self, request_type, roles, handler):
        self.request_type = request_type
        self.roles = tuple(roles)
        self.handler = handler


class CallContext:
    """What a handler knows of its call: the peer's identity and role, the trace id and the metadata."""

    def __init__(self, identity, metadata):
        self.identity = identity or ""
        self.role = self.identity[len("tokenet://") :].split("/")[0] if identity else ""
        self.metadata = metadata
        self.trace_id = next((entry.text for entry in metadata if entry.key == "tokenet-trace-id"), "")


class ServedConnection(FrameSocket):
    def __init__(self, sock, server):
        super().__init__(sock, server.wire)
        self.server = server
        self.identity = peer_identity(sock)
        self.calls = {}  # stream id -> {"method", "metadata", "requests", "started"}
        self.last_stream_id = 0

    def run(self):
        try:
            self.serve()
        except (EOFError, ConnectionError, ssl.SSLError, OSError):
            pass
        except tc.ProtocolError as error:
            self.goaway(self.wire.GO_AWAY_CODE_PROTOCOL_ERROR, str(error))
        finally:
            self.server.forget(self)
            try:
                self.sock.close()
            except OSError:
                pass

    def goaway(self, code, reason):
        try:
            self.send(
                self.wire.Frame(
                    stream_id=0, goaway=self.wire.GoAway(last_stream_id=self.last_stream_id, code=code, reason=reason)
                )
            )
        except (OSError, ssl.SSLError, ValueError):
            pass

    def serve(self):
        wire = self.wire
        hello = wire.Hello(protocol_version=tc.PROTOCOL_VERSION, settings=wire.Settings(), agent=self.server.agent)
        self.send(wire.Frame(stream_id=0, hello=hello))
        first = self.read_frame()
        if first.WhichOneof("kind") != "hello":
            raise tc.ProtocolError("the first frame is %s, not hello" % first.WhichOneof("kind"))
        if first.hello.protocol_version < 1:
            self.goaway(
                wire.GO_AWAY_CODE_UNSUPPORTED_VERSION,
                "protocol version %d is not supported; this node speaks 1" % first.hello.protocol_version,
            )
            return
        while True:
            self.handle(self.read_frame())

    def handle(self, frame):
        wire = self.wire
        kind = frame.WhichOneof("kind")
        sid = frame.stream_id
        if sid == 0:
            if kind == "ping":
                self.send(wire.Frame(stream_id=0, pong=wire.Pong(payload=frame.ping.payload)))
            return
        if kind == "call_start":
            if sid % 2 == 0 or sid > 2**31 - 1 or sid <= self.last_stream_id:
                raise tc.ProtocolError("call_start on stream %d" % sid)
            self.last_stream_id = sid
            start = frame.call_start
            if self.server.stopping:
                return self.status(sid, wire.UNAVAILABLE, "the server is shutting down")
            method = self.server.methods.get(start.method)
            if method is None:
                return self.status(sid, wire.UNIMPLEMENTED, "unknown method %s" % start.method[:256])
            context = CallContext(self.identity, list(start.metadata))
            if method.roles and context.role not in method.roles:
                return self.status(
                    sid,
                    wire.PERMISSION_DENIED,
                    "%s may be called by %s, not by %s" % (start.method, " or ".join(method.roles), context.role),
                )
            timeout = start.timeout_micros if start.HasField("timeout_micros") else None
            self.calls[sid] = {
                "method": method,
                "path": start.method,
                "context": context,
                "requests": [],
                "deadline": time.monotonic() + timeout / 1e6 if timeout is not None else None,
            }
        elif kind == "message":
            if sid in self.calls:
                self.calls[sid]["requests"].append(frame.message.data)
        elif kind == "half_close":
            call = self.calls.pop(sid, None)
            if call is not None:
                self.answer(sid, call)
        elif kind == "cancel":
            self.calls.pop(sid, None)

    def status(self, sid, code, message=""):
        self.send(self.wire.Frame(stream_id=sid, status=self.wire.Status(code=code, message=message)))

    def answer(self, sid, call):
        wire = self.wire
        if len(call["requests"]) != 1:
            return self.status(sid, wire.INTERNAL, "a unary call carries exactly one request")
        try:
            request = call["method"].request_type.FromString(call["requests"][0])
        except Exception:
            return self.status(
                sid, wire.INVALID_ARGUMENT, "the request is not a %s" % call["method"].request_type.DESCRIPTOR.full_name
            )
        try:
            response = call["method"].handler(request, call["context"])
        except RpcError as error:
            return self.status(sid, wire.StatusCode.Value(error.code), error.message)
        except Exception:
            # Internal error text stays here, never in a status (section 6).
            traceback.print_exc(file=sys.stderr)
            return self.status(sid, wire.INTERNAL, "internal error")
        if call["deadline"] is not None and time.monotonic() > call["deadline"]:
            return self.status(sid, wire.DEADLINE_EXCEEDED, "the deadline passed")
        self.send(
            wire.Frame(stream_id=sid, message=wire.Message(data=response.SerializeToString())),
            wire.Frame(stream_id=sid, status=wire.Status(code=wire.OK)),
        )


class UnaryServer:
    """Serves `methods` ({"/package.Service/Method": Method}) over mutual TLS on `listener`."""

    def __init__(self, wire, context, methods, agent="tokenet-python-server/1"):
        self.wire = wire
        self.context = context
        self.methods = methods
        self.agent = agent
        self.listener = None
        self.connections = set()
        self.lock = threading.Lock()
        self.stopping = False

    def listen(self, host, port):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(64)
        return self.listener.getsockname()

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            raw.settimeout(15)
            try:
                sock = self.context.wrap_socket(raw, server_side=True)
            except (ssl.SSLError, OSError):
                raw.close()
                continue
            sock.settimeout(None)
            connection = ServedConnection(sock, self)
            with self.lock:
                self.connections.add(connection)
            threading.Thread(target=connection.run, daemon=True).start()

    def forget(self, connection):
        with self.lock:
            self.connections.discard(connection)

    def stop(self):
        """Graceful shutdown (section 9): no new connections or calls; every connection gets a goaway naming the
        last call it processed (calls are answered as they complete, so none is left open), then is closed."""
        self.stopping = True
        try:
            self.listener.close()
        except OSError:
            pass
        with self.lock:
            connections = list(self.connections)
        for connection in connections:
            connection.goaway(self.wire.GO_AWAY_CODE_SHUTTING_DOWN, "the server is shutting down")
            try:
                connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
