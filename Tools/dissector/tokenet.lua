-- Tokenet wire protocol (version 1) dissector for Wireshark and tshark.
--
-- Decodes the frames of Protos/README.md (a 4-byte big-endian length, then a tokenet.wire.v1.Frame) inside TLS,
-- once Wireshark has the TLS secrets (nodes and the tokenet CLI write them to $SSLKEYLOGFILE), and in plaintext
-- mode (--plaintext) on bare TCP. Each frame gets its stream id, kind, method, status and metadata as filterable
-- fields (tokenet.*; numbers as sent, up to 64 bits: a malformed frame's varint above its 32-bit field is marked, not
-- cut), and the application message inside a `message` frame is handed to Wireshark's protobuf dissector as the
-- request or response type of its call's method, read from the .proto files in Protos/ (the protobuf search paths
-- must hold Protos/ and the directory with google/protobuf/descriptor.proto).
--
-- Tokenet's ports are usually ephemeral, so the dissector finds connections by their content: a heuristic accepts a
-- TLS or TCP payload that begins with a hello, every connection's first frame (a length within the limit, then a
-- Frame holding field 2 alone, a Hello of only its own fields, each with its wire type). A hello whose bytes come in
-- several TCP segments or TLS records is reassembled: while the bytes so far can only be the start of a hello, the
-- heuristic asks for the next segment; at the first byte that cannot be part of one it lets go, and the bytes it
-- held go on, whole, to whichever dissector they would have reached without it. Ports can also be named in the
-- preferences (Tokenet: TLS ports, plaintext ports) or with "Decode As".
--
--   tshark -X lua_script:Tools/dissector/tokenet.lua -o tls.keylog_file:keys.log -r capture.pcapng
--
-- Tools/dissector/tokenet-shark runs tshark with this script and the search paths set; Tools/dissector/install
-- adds both to a Wireshark profile for the GUI.

local tokenet = Proto("tokenet", "Tokenet RPC")

local status_names = {
    [0] = "OK", [1] = "CANCELLED", [2] = "UNKNOWN", [3] = "INVALID_ARGUMENT", [4] = "DEADLINE_EXCEEDED",
    [5] = "NOT_FOUND", [6] = "ALREADY_EXISTS", [7] = "PERMISSION_DENIED", [8] = "RESOURCE_EXHAUSTED",
    [9] = "FAILED_PRECONDITION", [10] = "ABORTED", [11] = "OUT_OF_RANGE", [12] = "UNIMPLEMENTED",
    [13] = "INTERNAL", [14] = "UNAVAILABLE", [15] = "DATA_LOSS", [16] = "UNAUTHENTICATED",
}

local goaway_names = {
    [0] = "NO_ERROR", [1] = "PROTOCOL_ERROR", [2] = "UNSUPPORTED_VERSION", [3] = "FRAME_TOO_LARGE",
    [4] = "IDLE_TIMEOUT", [5] = "KEEPALIVE_TIMEOUT", [6] = "SHUTTING_DOWN", [7] = "INTERNAL_ERROR",
    [8] = "TOO_MANY_CONNECTIONS",
}

-- Frame's `kind` oneof: field number -> name, as in tokenet/wire/v1/frame.proto.
local kind_names = {
    [2] = "hello", [3] = "call_start", [4] = "message", [5] = "half_close", [6] = "status", [7] = "cancel",
    [8] = "ping", [9] = "pong", [10] = "goaway", [11] = "window_update",
}

local f = tokenet.fields
f.length = ProtoField.uint32("tokenet.length", "Length", base.DEC)
-- The varints of 32-bit protobuf fields are shown as 64-bit fields: a malformed frame may send any varint up to 64
-- bits there, which a uint32 field would cut to its low bits.
f.stream_id = ProtoField.uint64("tokenet.stream_id", "Stream id", base.DEC)
f.kind = ProtoField.string("tokenet.kind", "Kind")
f.version = ProtoField.uint64("tokenet.hello.version", "Protocol version", base.DEC)
f.agent = ProtoField.string("tokenet.hello.agent", "Agent")
f.max_frame_size = ProtoField.uint64("tokenet.hello.max_frame_size", "Max frame size", base.DEC)
f.max_concurrent_streams = ProtoField.uint64("tokenet.hello.max_concurrent_streams", "Max concurrent streams",
    base.DEC)
f.initial_stream_window = ProtoField.uint64("tokenet.hello.initial_stream_window", "Initial stream window", base.DEC)
f.keepalive_interval = ProtoField.uint64("tokenet.hello.keepalive_interval_ms", "Keepalive interval (ms)", base.DEC)
f.method = ProtoField.string("tokenet.method", "Method")
f.timeout = ProtoField.uint64("tokenet.timeout_us", "Timeout (µs)", base.DEC)
f.metadata_key = ProtoField.string("tokenet.metadata.key", "Metadata key")
f.metadata_text = ProtoField.string("tokenet.metadata.text", "Metadata text value")
f.metadata_binary = ProtoField.bytes("tokenet.metadata.binary", "Metadata binary value")
f.trace_id = ProtoField.string("tokenet.trace_id", "Trace id")
f.direction = ProtoField.string("tokenet.direction", "Direction")
f.data = ProtoField.bytes("tokenet.data", "Message data")
f.status_code = ProtoField.uint64("tokenet.status.code", "Status code", base.DEC, status_names)
f.status_message = ProtoField.string("tokenet.status.message", "Status message")
f.detail_type = ProtoField.string("tokenet.status.detail_type", "Detail type")
f.detail_value = ProtoField.bytes("tokenet.status.detail_value", "Detail value")
f.cancel_reason = ProtoField.string("tokenet.cancel.reason", "Cancel reason")
f.ping_payload = ProtoField.uint64("tokenet.ping.payload", "Payload", base.HEX)
f.last_stream_id = ProtoField.uint64("tokenet.goaway.last_stream_id", "Last stream id", base.DEC)
f.goaway_code = ProtoField.uint64("tokenet.goaway.code", "Goaway code", base.DEC, goaway_names)
f.goaway_reason = ProtoField.string("tokenet.goaway.reason", "Goaway reason")
f.window_increment = ProtoField.uint64("tokenet.window_update.increment", "Window increment", base.DEC)
f.call_frame = ProtoField.framenum("tokenet.call_start_frame", "Call started in", base.NONE,
    frametype.REQUEST)

local ef_malformed = ProtoExpert.new("tokenet.malformed", "Frame does not parse as tokenet.wire.v1.Frame",
    expert.group.MALFORMED, expert.severity.ERROR)
local ef_error_status = ProtoExpert.new("tokenet.status.error", "Call ended with an error status",
    expert.group.RESPONSE_CODE, expert.severity.NOTE)
local ef_goaway_error = ProtoExpert.new("tokenet.goaway.error", "Connection closed with an error",
    expert.group.SEQUENCE, expert.severity.WARN)
local ef_unknown_stream = ProtoExpert.new("tokenet.unknown_stream",
    "Frame for a call whose call_start is not in the capture", expert.group.SEQUENCE, expert.severity.CHAT)
local ef_above_32_bits = ProtoExpert.new("tokenet.above_32_bits", "Value above 2^32 - 1 in a 32-bit field",
    expert.group.MALFORMED, expert.severity.WARN)
tokenet.experts = { ef_malformed, ef_error_status, ef_goaway_error, ef_unknown_stream, ef_above_32_bits }

tokenet.prefs.tls_ports = Pref.range("TLS ports", "", "Ports whose decrypted TLS payload is Tokenet", 65535)
tokenet.prefs.plaintext_ports = Pref.range("Plaintext ports", "",
    "Ports whose TCP payload is Tokenet in plaintext mode (--plaintext)", 65535)
tokenet.prefs.heuristic = Pref.bool("Find connections by content", true,
    "Recognise Tokenet connections on any port by their first frame")
tokenet.prefs.max_frame_size = Pref.uint("Largest frame length", 4194304,
    "Frame length prefixes above this are taken as not Tokenet (the protocol's default max_frame_size is 4 MiB), "
        .. "unless the receiver's hello announced a larger max_frame_size")

local tcp_stream_field = Field.new("tcp.stream")
local protobuf = Dissector.get("protobuf")

-- ---------------------------------------------------------------------------------------------------------------
-- A protobuf reader over a TvbRange: enough to walk tokenet.wire.v1.Frame and keep the bytes of every field.

-- The varint at `offset`, if it ends before `limit` (the end of `range` when not given): its value, a Lua number
-- (exact up to 2^53), and its length; nil when it does not end there or runs past 10 bytes.
local function read_varint(range, offset, limit)
    local value, multiplier = 0, 1
    local length = limit or range:len()
    for i = 0, 9 do
        if offset + i >= length then return nil end
        local byte = range(offset + i, 1):uint()
        value = value + (byte % 128) * multiplier
        multiplier = multiplier * 128
        if byte < 128 then return value, i + 1 end
    end
    return nil
end

-- Returns a list of { number, wire_type, value (varint) or range (length-delimited), whole (range) }, or nil and a
-- reason when the bytes are not a well-formed message.
local function read_fields(range)
    local fields = {}
    local offset, length = 0, range:len()
    while offset < length do
        local key, key_len = read_varint(range, offset)
        if key == nil then return nil, "truncated field key" end
        local number, wire_type = math.floor(key / 8), key % 8
        if number == 0 then return nil, "field number 0" end
        local start = offset
        offset = offset + key_len
        local field = { number = number, wire_type = wire_type }
        if wire_type == 0 then
            local value, value_len = read_varint(range, offset)
            if value == nil then return nil, "truncated varint" end
            field.value, field.value_range = value, range(offset, value_len)
            offset = offset + value_len
        elseif wire_type == 2 then
            local size, size_len = read_varint(range, offset)
            if size == nil then return nil, "truncated length" end
            offset = offset + size_len
            if offset + size > length then return nil, "length past the end of the frame" end
            field.range = size > 0 and range(offset, size) or nil
            field.size = size
            offset = offset + size
        elseif wire_type == 1 then
            if offset + 8 > length then return nil, "truncated fixed64" end
            offset = offset + 8
        elseif wire_type == 5 then
            if offset + 4 > length then return nil, "truncated fixed32" end
            offset = offset + 4
        else
            return nil, "wire type " .. wire_type
        end
        field.whole = range(start, offset - start)
        fields[#fields + 1] = field
    end
    return fields
end

-- A varint as a UInt64, for the 64-bit fields (timeouts, ping payloads), which a Lua number would round above 2^53.
local function varint_uint64(range)
    local value = UInt64(0)
    for i = 0, range:len() - 1 do
        value = value + UInt64(range(i, 1):uint() % 128):lshift(7 * i)
    end
    return value
end

local uint32_max = UInt64(0xFFFFFFFF)

-- Adds a varint field of a 32-bit protobuf type with its value as sent and returns that value as decimal text, for
-- the summary: a Lua number would show a value above 2^53 rounded, and above 10^14 in exponent form.
local function add_varint32(tree, proto_field, field)
    local value = varint_uint64(field.value_range)
    local item = tree:add(proto_field, field.whole, value)
    if value > uint32_max then
        item:add_proto_expert_info(ef_above_32_bits, "Value " .. tostring(value) .. " is above 2^32 - 1")
    end
    return tostring(value)
end

-- Card numbers never show, as in the nodes' logs (Sources/TokenetNode/PANMasking.swift, whose main rule this is):
-- a run of 13 or more digits, its groups joined by single spaces, hyphens, dots or underscores, keeps its last four
-- digits; a lone run of exactly 13 that does not start with a 4 (a time in milliseconds) is no card number. Operator
-- calls such as WalletControl/AddCard and IssuerCardCare/RenewCard carry a card number inside TLS, and a peer's
-- status message may quote one. Returns the 0-based positions of the digits to mask among the `count` bytes `at`
-- gives.
local function card_number_digits(at, count)
    local function digit(i) local b = at(i) return b >= 48 and b <= 57 end
    local function joint(i) local b = at(i) return b == 32 or b == 45 or b == 46 or b == 95 end
    local masked = {}
    local i = 0
    while i < count do
        if not digit(i) then
            i = i + 1
        else
            local digits, groups = {}, 0
            local j = i
            while true do
                while j < count and digit(j) do
                    digits[#digits + 1] = j
                    j = j + 1
                end
                groups = groups + 1
                if j + 1 < count and joint(j) and digit(j + 1) then j = j + 1 else break end
            end
            local time = groups == 1 and #digits == 13 and at(digits[1]) ~= 52
            if #digits >= 13 and not time then
                for k = 1, #digits - 4 do masked[#masked + 1] = digits[k] end
            end
            i = j
        end
    end
    return masked
end

local function masked_text(value)
    local positions = card_number_digits(function(i) return value:byte(i + 1) end, #value)
    if #positions == 0 then return value end
    local bytes = { value:byte(1, -1) }
    for _, position in ipairs(positions) do bytes[position + 1] = 42 end
    local parts = {}
    for k = 1, #bytes, 4096 do parts[#parts + 1] = string.char(table.unpack(bytes, k, math.min(k + 4095, #bytes))) end
    return table.concat(parts)
end

-- The fields whose values never show, as in the CLI's decoders (Sources/tokenet/SecretFields.swift): every field
-- named cvc, pin or secret in Protos/, by message type as paths of field numbers from the outside in, and by method
-- the request and response types that hold any.
-- BEGIN generated by Tools/gen-protos
local secret_fields = {
    messages = {
        ["tokenet.issuer.v1.ActivateLinkedRequest"] = { { 2 } },
        ["tokenet.issuer.v1.AppActivateRequest"] = { { 4 } },
        ["tokenet.issuer.v1.AppAnswerAuthnRequest"] = { { 3 } },
        ["tokenet.issuer.v1.AppDeleteAccountRequest"] = { { 3 } },
        ["tokenet.issuer.v1.AppLoginRequest"] = { { 2 } },
        ["tokenet.issuer.v1.AuthorizeAppSessionRequest"] = { { 2 } },
        ["tokenet.tsp.v1.HotpCredential"] = { { 2 } },
        ["tokenet.tsp.v1.VerifyActivationResponse"] = { { 6, 2 }, { 7, 2 } },
        ["tokenet.tsp.v1.VerifyActivationsResponse"] = { { 1, 6, 2 }, { 1, 7, 2 } },
        ["tokenet.wallet.v1.AddCardRequest"] = { { 1, 3 } },
        ["tokenet.wallet.v1.ManualCard"] = { { 3 } },
    },
    methods = {
        ["/tokenet.issuer.v1.IssuerAppToApp/Authorize"] = { request = "tokenet.issuer.v1.AuthorizeAppSessionRequest" },
        ["/tokenet.issuer.v1.IssuerAppAuth/Activate"] = { request = "tokenet.issuer.v1.AppActivateRequest" },
        ["/tokenet.issuer.v1.IssuerAppAuth/ActivateLinked"] = { request = "tokenet.issuer.v1.ActivateLinkedRequest" },
        ["/tokenet.issuer.v1.IssuerAppAuth/Login"] = { request = "tokenet.issuer.v1.AppLoginRequest" },
        ["/tokenet.issuer.v1.IssuerAppAuth/DeleteAccount"] = { request = "tokenet.issuer.v1.AppDeleteAccountRequest" },
        ["/tokenet.issuer.v1.IssuerAppInbox/AnswerAuthn"] = { request = "tokenet.issuer.v1.AppAnswerAuthnRequest" },
        ["/tokenet.tsp.v1.Authentication/VerifyActivation"] = { response = "tokenet.tsp.v1.VerifyActivationResponse" },
        ["/tokenet.tsp.v1.Authentication/VerifyActivations"] = { response = "tokenet.tsp.v1.VerifyActivationsResponse" },
        ["/tokenet.wallet.v1.WalletControl/AddCard"] = { request = "tokenet.wallet.v1.AddCardRequest" },
    },
}
-- END generated by Tools/gen-protos

-- Adds to `positions` the 0-based offsets (from `base`) of the bytes of every field `paths` leads to in `range`.
local function secret_positions(range, base, paths, depth, positions)
    local fields = range and read_fields(range)
    if fields == nil then return end
    for _, field in ipairs(fields) do
        if field.wire_type == 2 and field.range then
            local deeper = {}
            for _, path in ipairs(paths) do
                if path[depth] == field.number then
                    if #path == depth then
                        local start = field.range:offset() - base
                        for k = 0, field.size - 1 do positions[#positions + 1] = start + k end
                    else
                        deeper[#deeper + 1] = path
                    end
                end
            end
            if #deeper > 0 then secret_positions(field.range, base, deeper, depth + 1, positions) end
        end
    end
end

-- A message's bytes with any card number in them masked, and the value of every secret field of its type (a
-- message type name, when known) replaced by asterisks: the same length, so every field stays where it was. For the
-- protobuf dissector and the tree's hex view: a new data source named so when something was masked.
local function masked_tvb(range, message_type)
    local bytes = range:bytes()
    local positions = card_number_digits(function(i) return bytes:get_index(i) end, bytes:len())
    local paths = message_type and secret_fields.messages[message_type]
    if paths then secret_positions(range, range:offset(), paths, 1, positions) end
    if #positions == 0 then return range:tvb() end
    for _, position in ipairs(positions) do bytes:set_index(position, 42) end
    return bytes:tvb("Message (card data masked)")
end

-- Text from a peer as the summary and the tree's labels show it: control characters escaped, so that a status
-- message cannot clear a terminal, colour it or start a line that looks like another frame's.
local function escaped(value)
    return (value:gsub("%c", function(c)
        local names = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
        return names[c] or string.format("\\x%02x", c:byte())
    end))
end

local function text(field)
    if field.range == nil then return "" end
    return masked_text(field.range:string(ENC_UTF_8))
end

-- Checks that `range` is a Frame: a stream id, at most one kind, each with its wire type.
local function parse_frame(range)
    if range == nil then return { stream_id = 0 } end
    local fields, reason = read_fields(range)
    if fields == nil then return nil, reason end
    local frame = { stream_id = 0 }
    for _, field in ipairs(fields) do
        if field.number == 1 then
            if field.wire_type ~= 0 then return nil, "stream_id is not a varint" end
            frame.stream_id, frame.stream_field = field.value, field
        elseif kind_names[field.number] then
            if field.wire_type ~= 2 then return nil, kind_names[field.number] .. " is not a message" end
            frame.kind, frame.body, frame.body_field = kind_names[field.number], field.range, field
        end
    end
    return frame
end

-- ---------------------------------------------------------------------------------------------------------------
-- Calls, per TCP connection: stream id -> { method, client (address:port), started (frame number) }.

local connections = {}
-- Connections whose first frame the heuristic recognised.
local recognised = {}
-- Per connection, the max_frame_size each endpoint (address:port) announced in its hello: the frames sent to it
-- may be that long, which a peer may set above the 4 MiB default.
local frame_limits = {}

local function connection_key(pinfo)
    local stream = tcp_stream_field()
    if stream then return tostring(stream.value) end
    local a = tostring(pinfo.src) .. ":" .. pinfo.src_port
    local b = tostring(pinfo.dst) .. ":" .. pinfo.dst_port
    if a < b then return a .. "-" .. b end
    return b .. "-" .. a
end

local function calls_of(pinfo)
    local key = connection_key(pinfo)
    local calls = connections[key]
    if calls == nil then
        calls = {}
        connections[key] = calls
    end
    return calls
end

local function sender(pinfo)
    return tostring(pinfo.src) .. ":" .. pinfo.src_port
end

function tokenet.init()
    connections = {}
    recognised = {}
    frame_limits = {}
end

-- The longest frame the receiver of this packet accepts: what it announced, or the preference when that is more.
local function frame_limit(pinfo)
    local limits = frame_limits[connection_key(pinfo)]
    local announced = limits and limits[tostring(pinfo.dst) .. ":" .. pinfo.dst_port] or 0
    return math.max(announced, tokenet.prefs.max_frame_size)
end

-- ---------------------------------------------------------------------------------------------------------------
-- One frame's tree.

local function add_metadata(tree, field)
    local entries = field.range and read_fields(field.range) or {}
    local key, value = "", nil
    local subtree = tree:add(tokenet, field.whole, "Metadata")
    for _, entry in ipairs(entries) do
        if entry.number == 1 and entry.wire_type == 2 then
            key = text(entry)
            subtree:add(f.metadata_key, entry.range or entry.whole, key)
        elseif entry.number == 2 and entry.wire_type == 2 then
            value = text(entry)
            subtree:add(f.metadata_text, entry.range or entry.whole, value)
        elseif entry.number == 3 and entry.wire_type == 2 then
            value = "(" .. entry.size .. " bytes)"
            if entry.range then subtree:add(f.metadata_binary, entry.range) end
        end
    end
    subtree:set_text(escaped("Metadata: " .. key .. ": " .. (value or "")))
    if key == "tokenet-trace-id" and value then tree:add(f.trace_id, field.whole, value) end
    return key, value
end

local function dissect_payload(data_range, pinfo, tree, message_type_info, message_type)
    if data_range == nil or protobuf == nil then return end
    local previous = pinfo.private["pb_msg_type"]
    pinfo.private["pb_msg_type"] = message_type_info
    pcall(Dissector.call, protobuf, masked_tvb(data_range, message_type), pinfo, tree)
    pinfo.private["pb_msg_type"] = previous
end

-- Returns the summary for the Info column.
local function dissect_frame(range, pinfo, tree, frame)
    local body_fields = frame.body and read_fields(frame.body) or {}
    local calls = calls_of(pinfo)
    local kind = frame.kind or "(no kind)"
    local summary = kind
    if frame.stream_field then
        local stream_id = add_varint32(tree, f.stream_id, frame.stream_field)
        if frame.stream_id ~= 0 then summary = stream_id .. " " .. kind end
    else
        tree:add(f.stream_id, range(0, 0), UInt64(0))
    end
    tree:add(f.kind, frame.body_field and frame.body_field.whole or range(0, 0), kind)

    local call = calls[frame.stream_id]
    if kind ~= "call_start" and frame.stream_id ~= 0 then
        if call then
            tree:add(f.method, range(0, 0), call.method):set_generated()
            tree:add(f.call_frame, range(0, 0), call.started):set_generated()
            -- Only the call_start carries the trace id: shown on every frame of the call, a filter on it finds the
            -- flow's messages, statuses and cancels too, not only the starts of its calls.
            if call.trace then tree:add(f.trace_id, range(0, 0), call.trace):set_generated() end
        else
            tree:add_proto_expert_info(ef_unknown_stream)
        end
    end

    if kind == "hello" then
        for _, field in ipairs(body_fields) do
            -- Each field is read by the wire type it has: a version sent length-delimited has no value to show.
            if field.number == 1 and field.wire_type == 0 then
                summary = summary .. " v" .. add_varint32(tree, f.version, field)
            elseif field.number == 2 and field.range then
                for _, setting in ipairs(read_fields(field.range) or {}) do
                    local setting_field = ({ f.max_frame_size, f.max_concurrent_streams, f.initial_stream_window,
                        f.keepalive_interval })[setting.number]
                    if setting_field and setting.wire_type == 0 then
                        add_varint32(tree, setting_field, setting)
                        if setting.number == 1 then
                            local key = connection_key(pinfo)
                            frame_limits[key] = frame_limits[key] or {}
                            frame_limits[key][sender(pinfo)] = setting.value
                        end
                    end
                end
            elseif field.number == 3 then
                tree:add(f.agent, field.range or field.whole, text(field))
                summary = summary .. " " .. text(field)
            end
        end
    elseif kind == "call_start" then
        local method, trace = "", nil
        for _, field in ipairs(body_fields) do
            if field.number == 1 then
                method = text(field)
                tree:add(f.method, field.range or field.whole, method)
            elseif field.number == 2 and field.wire_type == 2 then
                local key, value = add_metadata(tree, field)
                if key == "tokenet-trace-id" then trace = value end
            elseif field.number == 3 and field.wire_type == 0 then
                tree:add(f.timeout, field.whole, varint_uint64(field.value_range))
            end
        end
        if not pinfo.visited or calls[frame.stream_id] == nil then
            calls[frame.stream_id] = { method = method, client = sender(pinfo), started = pinfo.number, trace = trace }
        end
        summary = summary .. " " .. method
    elseif kind == "message" then
        local data
        for _, field in ipairs(body_fields) do
            if field.number == 1 and field.wire_type == 2 then data = field end
        end
        local direction = "response"
        if call and call.client == sender(pinfo) then direction = "request" end
        if call then tree:add(f.direction, range(0, 0), direction):set_generated() end
        local size = data and data.size or 0
        summary = summary .. " " .. (call and direction or "") .. " (" .. size .. " bytes)"
        if data and data.range then
            -- The bytes as the tree shows them in hex are masked too: a card number's digits are as readable there.
            local types = call and secret_fields.methods[call.method]
            local message_type = types and types[direction]
            tree:add(f.data, masked_tvb(data.range, message_type):range())
            if call then
                dissect_payload(data.range, pinfo, tree, "application/grpc," .. call.method .. "," .. direction,
                    message_type)
            end
        end
    elseif kind == "status" then
        -- A code of 0 (OK) is not on the wire: proto3 leaves default values out.
        local code, code_field, message, message_range = 0, nil, "", nil
        for _, field in ipairs(body_fields) do
            if field.number == 1 and field.wire_type == 0 then
                code, code_field = field.value, field
            elseif field.number == 2 then
                message, message_range = text(field), field.range or field.whole
            end
        end
        local code_text = "0"
        if code_field then
            code_text = add_varint32(tree, f.status_code, code_field)
        else
            tree:add(f.status_code, frame.body_field.whole, UInt64(0))
        end
        if message_range then tree:add(f.status_message, message_range, message) end
        for _, field in ipairs(body_fields) do
            if field.number == 3 and field.range then
                local detail_type, detail_value = "", nil
                for _, part in ipairs(read_fields(field.range) or {}) do
                    if part.number == 1 then detail_type = text(part) end
                    if part.number == 2 then detail_value = part.range end
                end
                local detail = tree:add(f.detail_type, field.whole, detail_type)
                if detail_value then
                    detail:add(f.detail_value, detail_value)
                    if detail_type:match("^[%w_]+[%w_.]*%.[%w_]+$") then
                        dissect_payload(detail_value, pinfo, detail, "message," .. detail_type, detail_type)
                    end
                end
            elseif field.number == 4 and field.wire_type == 2 then
                add_metadata(tree, field)
            end
        end
        local name = status_names[code] or ("code " .. code_text)
        summary = summary .. " " .. name
        if message ~= "" then summary = summary .. " \"" .. message .. "\"" end
        if code ~= 0 then tree:add_proto_expert_info(ef_error_status, "Call ended with " .. name) end
    elseif kind == "cancel" then
        for _, field in ipairs(body_fields) do
            if field.number == 1 then
                tree:add(f.cancel_reason, field.range or field.whole, text(field))
                summary = summary .. " \"" .. text(field) .. "\""
            end
        end
    elseif kind == "ping" or kind == "pong" then
        for _, field in ipairs(body_fields) do
            if field.number == 1 and field.wire_type == 0 then
                tree:add(f.ping_payload, field.whole, varint_uint64(field.value_range))
            end
        end
    elseif kind == "goaway" then
        local code, code_text, reason, last = 0, "0", "", "0"
        for _, field in ipairs(body_fields) do
            if field.number == 1 and field.wire_type == 0 then
                last = add_varint32(tree, f.last_stream_id, field)
            elseif field.number == 2 and field.wire_type == 0 then
                code, code_text = field.value, add_varint32(tree, f.goaway_code, field)
            elseif field.number == 3 then
                reason = text(field)
                tree:add(f.goaway_reason, field.range or field.whole, reason)
            end
        end
        summary = summary .. " " .. (goaway_names[code] or ("code " .. code_text)) .. " last=" .. last
        if reason ~= "" then summary = summary .. " \"" .. reason .. "\"" end
        if code ~= 0 and code ~= 6 then tree:add_proto_expert_info(ef_goaway_error) end
    elseif kind == "window_update" then
        for _, field in ipairs(body_fields) do
            if field.number == 1 and field.wire_type == 0 then
                summary = summary .. " +" .. add_varint32(tree, f.window_increment, field)
            end
        end
    end
    return summary
end

-- ---------------------------------------------------------------------------------------------------------------
-- Framing: many frames per segment, frames across segments.

function tokenet.dissector(tvb, pinfo, tree)
    local total = tvb:len()
    local offset = 0
    local summaries = {}
    while offset < total do
        if total - offset < 4 then
            pinfo.desegment_offset = offset
            pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
            break
        end
        local length = tvb(offset, 4):uint()
        if length > frame_limit(pinfo) then
            local item = tree:add(tokenet, tvb(offset), "Tokenet: frame length " .. length .. " above the limit")
            item:add_proto_expert_info(ef_malformed, "Length prefix " .. length .. " is above the largest frame")
            summaries[#summaries + 1] = "frame of " .. length .. " bytes (above the limit)"
            offset = total
            break
        end
        if total - offset < 4 + length then
            pinfo.desegment_offset = offset
            pinfo.desegment_len = 4 + length - (total - offset)
            break
        end
        local whole = tvb(offset, 4 + length)
        local body = length > 0 and tvb(offset + 4, length) or nil
        local subtree = tree:add(tokenet, whole)
        subtree:add(f.length, tvb(offset, 4))
        local frame, reason = parse_frame(body)
        if frame == nil then
            subtree:add_proto_expert_info(ef_malformed, "Not a Frame: " .. reason)
            subtree:set_text("Tokenet: malformed frame (" .. reason .. ")")
            summaries[#summaries + 1] = "malformed frame"
        else
            local summary = dissect_frame(body or whole, pinfo, subtree, frame)
            summary = escaped(summary)
            subtree:set_text("Tokenet: " .. summary)
            summaries[#summaries + 1] = summary
        end
        offset = offset + 4 + length
    end
    if #summaries > 0 then
        -- A packet may carry several TLS records, each dissected on its own: the first sets the columns, the
        -- others append to them.
        local info = table.concat(summaries, ", ")
        if tostring(pinfo.cols.protocol) == "Tokenet" then
            pinfo.cols.info:append(", " .. info)
        else
            pinfo.cols.protocol = "Tokenet"
            pinfo.cols.info = info
        end
    end
    return offset
end

-- ---------------------------------------------------------------------------------------------------------------
-- Finding connections: by port (preferences, Decode As) and by content.

-- A connection's first frame is a hello, and its bytes may come in several segments (or TLS records): the heuristic
-- asks for more only while the bytes so far can still be nothing but the start of a hello Frame, so that other
-- traffic is refused at its first byte that cannot be one.

-- What may follow each one-byte field key inside a hello: a varint, bytes, or a message with those keys.
local settings_keys = { [0x08] = "varint", [0x10] = "varint", [0x18] = "varint", [0x20] = "varint" }
local hello_keys = { [0x08] = "varint", [0x12] = settings_keys, [0x1A] = "bytes" }

-- Whether the bytes from `offset` up to `stop` (which may lie past the end of `tvb`) are, as far as present, a
-- message with `keys`: each field one of them, with what follows its key, and each ending by `stop`.
local function fits(tvb, offset, stop, keys)
    local limit = math.min(stop, tvb:len())
    -- Something cut off at `limit` may still end well if the bytes ran out there, not if the message ends there.
    local ran_out = limit < stop
    while offset < limit do
        local follows = keys[tvb(offset, 1):uint()]
        if follows == nil then return false end
        offset = offset + 1
        local value, value_len = read_varint(tvb, offset, limit)
        if value == nil then return ran_out and limit - offset < 10 end
        offset = offset + value_len
        if follows ~= "varint" then
            local finish = offset + value
            if finish > stop then return false end
            if type(follows) == "table" and not fits(tvb, offset, finish, follows) then return false end
            offset = finish
        end
    end
    return true
end

-- "hello" when `tvb` starts with a whole hello Frame (a length within the limit, then field 2 alone, a Hello of
-- known fields each of its wire type), "more" when its bytes so far are the start of one, nil otherwise.
local function hello_start(tvb)
    local available = tvb:len()
    -- The length prefix as far as present, its missing bytes taken as zeros, must be within the limit.
    local length = 0
    for i = 0, 3 do length = length * 256 + (i < available and tvb(i, 1):uint() or 0) end
    if length > tokenet.prefs.max_frame_size then return nil end
    if available < 4 then return "more" end
    -- The smallest hello Frame is its key and a zero length.
    if length < 2 then return nil end
    if available == 4 then return "more" end
    if tvb(4, 1):uint() ~= 0x12 then return nil end
    local stop = 4 + length
    local limit = math.min(stop, available)
    local size, size_len = read_varint(tvb, 5, limit)
    if size == nil then
        if limit < stop and limit - 5 < 10 then return "more" end
        return nil
    end
    -- The hello fills the frame: nothing else comes with it, not even a stream id (a hello's is 0, left out).
    if 5 + size_len + size ~= stop then return nil end
    if not fits(tvb, 5 + size_len, stop, hello_keys) then return nil end
    if available < stop then return "more" end
    return "hello"
end

local function heuristic(tvb, pinfo, tree)
    if not tokenet.prefs.heuristic then return false end
    local key = connection_key(pinfo)
    if not recognised[key] then
        local seen = hello_start(tvb)
        if seen == nil then return false end
        if seen == "more" then
            -- Without reassembly (turned off in TCP's or TLS's preferences) the bytes would be held for nothing.
            if pinfo.can_desegment == 0 then return false end
            -- TCP (or TLS) keeps these bytes and calls the heuristic again with the next segment added to them.
            pinfo.desegment_offset = 0
            pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
            return true
        end
        recognised[key] = true
    end
    tokenet.dissector(tvb, pinfo, tree)
    return true
end

local registered_tls, registered_tcp = nil, nil

function tokenet.prefs_changed()
    local tls_table, tcp_table = DissectorTable.get("tls.port"), DissectorTable.get("tcp.port")
    if registered_tls then tls_table:remove(registered_tls, tokenet) end
    if registered_tcp then tcp_table:remove(registered_tcp, tokenet) end
    registered_tls, registered_tcp = nil, nil
    if tokenet.prefs.tls_ports ~= "" then
        tls_table:add(tokenet.prefs.tls_ports, tokenet)
        registered_tls = tokenet.prefs.tls_ports
    end
    if tokenet.prefs.plaintext_ports ~= "" then
        tcp_table:add(tokenet.prefs.plaintext_ports, tokenet)
        registered_tcp = tokenet.prefs.plaintext_ports
    end
end

tokenet:register_heuristic("tls", heuristic)
tokenet:register_heuristic("tcp", heuristic)
DissectorTable.get("tls.port"):add_for_decode_as(tokenet)
DissectorTable.get("tcp.port"):add_for_decode_as(tokenet)
