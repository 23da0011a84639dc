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

-- This file's path and text, to tell another copy of the dissector loaded before it from this very file.
local own_path, own_text = "?", nil
do
    local source = debug and debug.getinfo(1, "S").source or ""
    if source:sub(1, 1) == "@" then
        own_path = source:sub(2)
        local file = io.open(own_path, "rb")
        if file then own_text = file:read("*a"); file:close() end
    end
end

-- Loaded once only: with the plugin installed (Tools/dissector/install) and this file also given with
-- -X lua_script:, the second Proto() of the same name stopped the script with a Lua error on every run. The copy
-- loaded first decodes, so one that is not this file (another checkout's, an older revision, which may show what
-- this one masks) is an error, not a silent return.
local registered, tokenet = pcall(Proto, "tokenet", "Tokenet RPC")
if not registered then
    local loaded_text, loaded_path = rawget(_G, "tokenet_dissector_text"), rawget(_G, "tokenet_dissector_path")
    if loaded_text == nil or loaded_text ~= own_text then
        error("another revision of the Tokenet dissector (" .. (loaded_path or "an older copy") .. ") was loaded"
            .. " before " .. own_path .. " and decodes in its place: run Tools/dissector/install again, or remove"
            .. " that copy from the Lua plugins folder", 0)
    end
    return
end
_G.tokenet_dissector_text, _G.tokenet_dissector_path = own_text, own_path

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
-- The length of a binary metadata value, whose bytes are withheld: what they hold (a credential as well as a card
-- number) cannot be told.
f.metadata_binary_withheld = ProtoField.uint32("tokenet.metadata.binary_withheld",
    "Metadata binary value withheld (bytes)", base.DEC)
f.trace_id = ProtoField.string("tokenet.trace_id", "Trace id")
f.direction = ProtoField.string("tokenet.direction", "Direction")
f.data = ProtoField.bytes("tokenet.data", "Message data")
-- The length of a message whose bytes are withheld: its type is not known, so its secrets cannot be found.
f.data_withheld = ProtoField.uint32("tokenet.data_withheld", "Message data withheld (bytes)", base.DEC)
f.status_code = ProtoField.uint64("tokenet.status.code", "Status code", base.DEC, status_names)
f.status_message = ProtoField.string("tokenet.status.message", "Status message")
f.detail_type = ProtoField.string("tokenet.status.detail_type", "Detail type")
f.detail_value = ProtoField.bytes("tokenet.status.detail_value", "Detail value")
-- The length of a status detail's value whose bytes are withheld, as a message's are.
f.detail_withheld = ProtoField.uint32("tokenet.status.detail_withheld", "Detail value withheld (bytes)", base.DEC)
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
-- Wireshark counts each dissector a packet calls as a layer and stops at gui.max_tree_depth (500) with a "Dissector
-- bug" assertion: a loopback segment of small frames (64 KiB of them) holds more messages than that. Past this many
-- in one packet, messages are shown as bytes only, and the frame says why.
local max_payloads_per_packet = 200
local ef_payloads_skipped = ProtoExpert.new("tokenet.payloads_skipped",
    "Message not decoded: more than " .. max_payloads_per_packet .. " in one packet", expert.group.UNDECODED,
    expert.severity.NOTE)
tokenet.experts = { ef_malformed, ef_error_status, ef_goaway_error, ef_unknown_stream, ef_above_32_bits,
    ef_payloads_skipped }

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

-- Card numbers never show, as in the nodes' logs: the rule of Sources/TokenetNode/PANMasking.swift (`maskPAN`),
-- whose comments say why each part is there. A run of digits joined by a space, hyphen, dot, underscore, tab, line
-- break, control or format character, or a gap of up to four of those, holds a card number when it has 13 digits or
-- more (but for a lone 13 not starting with a 4, a time in milliseconds), and keeps its last four; groups split by
-- slashes, commas, colons or semicolons are masked where 13–19 digits in groups of three or more follow each other;
-- fullwidth and other decimal digits count as digits. Visa token reference ids, IPv4 addresses and hex identifiers
-- (a digest, a Mastercard token id) are left alone, unless a hex identifier's digits hold a Luhn-valid number.
-- Operator calls such as WalletControl/AddCard and IssuerCardCare/RenewCard carry a card number inside TLS, and a
-- peer's status message may quote one.

local DIGIT, SEPARATOR, DOT, PUNCTUATION, OTHER = 1, 2, 3, 4, 5
local WIDEST_GAP = 4

-- The first code point of each block of ten decimal digits beyond ASCII's (Unicode category Nd), and the ranges of
-- format characters (Cf), spaces (Zs, Zl, Zp) and dashes (Pd) beyond ASCII, which join digits as a space does: as
-- Unicode 14 has them, close to the Swift runtime's tables behind `maskPAN`.
local digit_zeros = {
    0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6,
    0x0C66, 0x0CE6, 0x0D66, 0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090,
    0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40,
    0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0,
    0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60,
    0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0,
    0x1E950, 0x1FBF0,
}
local mark_ranges = {
    { 0x0300, 0x036F }, { 0x1AB0, 0x1AFF }, { 0x1DC0, 0x1DFF }, { 0x20D0, 0x20FF }, { 0xFE00, 0xFE0F },
    { 0xFE20, 0xFE2F },
}
local function is_mark(cp)
    for _, range in ipairs(mark_ranges) do
        if cp >= range[1] and cp <= range[2] then return true end
    end
    return false
end
local joining_ranges = {
    { 0x00A0, 0x00A0 }, { 0x00AD, 0x00AD }, { 0x058A, 0x058A }, { 0x05BE, 0x05BE }, { 0x0600, 0x0605 },
    { 0x061C, 0x061C }, { 0x06DD, 0x06DD }, { 0x070F, 0x070F }, { 0x0890, 0x0891 }, { 0x08E2, 0x08E2 },
    { 0x1400, 0x1400 }, { 0x1680, 0x1680 }, { 0x1806, 0x1806 }, { 0x180E, 0x180E }, { 0x2000, 0x2015 },
    { 0x2028, 0x202F }, { 0x205F, 0x2064 }, { 0x2066, 0x206F }, { 0x2E17, 0x2E17 }, { 0x2E1A, 0x2E1A },
    { 0x2E3A, 0x2E3B }, { 0x2E40, 0x2E40 }, { 0x2E5D, 0x2E5D }, { 0x3000, 0x3000 }, { 0x301C, 0x301C },
    { 0x3030, 0x3030 }, { 0x30A0, 0x30A0 }, { 0xFE31, 0xFE32 }, { 0xFE58, 0xFE58 }, { 0xFE63, 0xFE63 },
    { 0xFEFF, 0xFEFF }, { 0xFF0D, 0xFF0D }, { 0xFFF9, 0xFFFB }, { 0x10EAD, 0x10EAD }, { 0x110BD, 0x110BD },
    { 0x110CD, 0x110CD }, { 0x13430, 0x13438 }, { 0x1BCA0, 0x1BCA3 }, { 0x1D173, 0x1D17A }, { 0xE0001, 0xE0001 },
    { 0xE0020, 0xE007F },
    -- Dots and minus signs other than ASCII's, as a formatted page may put them between a card number's groups: the
    -- middle dots, the modifier and heavy minus, the bullets, the dot leader, the hyphenation point, the minus sign.
    { 0x00B7, 0x00B7 }, { 0x0387, 0x0387 }, { 0x02D7, 0x02D7 }, { 0x2022, 0x2022 }, { 0x2024, 0x2024 },
    { 0x2027, 0x2027 }, { 0x2043, 0x2043 }, { 0x2212, 0x2212 }, { 0x2219, 0x2219 }, { 0x22C5, 0x22C5 },
    { 0x2796, 0x2796 }, { 0x2E31, 0x2E31 }, { 0x30FB, 0x30FB }, { 0xFF65, 0xFF65 },
}

-- Characters that look like the ASCII punctuation that joins card-number-like groups (PANMasking.swift's list).
local lookalike_punctuation = {}
for _, cp in ipairs({
    0x2215, 0x2044, 0x29F8, 0x2217, 0x204E, 0x2731, 0x066D, 0x223C, 0x2053, 0x2236, 0x2223, 0x00A6, 0x2016,
    0x02D0, 0x00D7, 0x00F7, 0x3001, 0x3002, 0x060C, 0x061B,
}) do lookalike_punctuation[cp] = true end

-- A comma or semicolon (ASCII, fullwidth, ideographic, Arabic), what separates the items of a list, or a bar, what
-- separates a table's columns.
local function is_list_mark(cp)
    return cp == 44 or cp == 59 or cp == 0xFF0C or cp == 0xFF1B or cp == 0x3001 or cp == 0x061B or cp == 0x060C
        or cp == 124 or cp == 0xFF5C or cp == 0x00A6 or cp == 0x2016 or cp == 0x2223
end

-- The value of a decimal digit, or nil.
local function digit_value(cp)
    if cp >= 48 and cp <= 57 then return cp - 48 end
    if cp < 0x0660 then return nil end
    for _, zero in ipairs(digit_zeros) do
        if cp >= zero and cp <= zero + 9 then return cp - zero end
    end
    return nil
end

local function kind_of(cp)
    if cp >= 48 and cp <= 57 then return DIGIT end
    if cp == 46 then return DOT end
    if cp == 32 or cp == 45 or cp == 95 or cp == 9 or cp == 10 or cp == 13 then return SEPARATOR end
    -- / , : ; | + = " ' \ * ~ and the other ASCII symbols: # @ ! $ % & ? ^ ` ( ) [ ] { } < >
    if cp == 47 or cp == 44 or cp == 58 or cp == 59 or cp == 124 or cp == 43 or cp == 61 or cp == 34 or cp == 39
        or cp == 92 or cp == 42 or cp == 126 or cp == 35 or cp == 64 or cp == 33 or cp == 36 or cp == 37
        or cp == 38 or cp == 63 or cp == 94 or cp == 96 or cp == 40 or cp == 41 or cp == 91 or cp == 93
        or cp == 123 or cp == 125 or cp == 60 or cp == 62 then
        return PUNCTUATION
    end
    -- Lookalikes of that punctuation, the times and division signs, the ideographic comma and full stop, the
    -- Arabic comma and semicolon.
    if lookalike_punctuation[cp] then return PUNCTUATION end
    -- The fullwidth forms of ASCII (`４`, `－`, `／`) are ASCII's characters moved by 0xFEE0.
    if cp >= 0xFF01 and cp <= 0xFF5E then return kind_of(cp - 0xFEE0) end
    if (cp >= 0 and cp <= 0x1F) or (cp >= 0x7F and cp <= 0x9F) then return SEPARATOR end
    if cp < 0x80 then return OTHER end
    -- Combining marks written over the digits (`4̂1̂…`, a keycap): the digits still read as one number.
    if is_mark(cp) then return SEPARATOR end
    for _, range in ipairs(joining_ranges) do
        if cp >= range[1] and cp <= range[2] then return SEPARATOR end
    end
    if digit_value(cp) then return DIGIT end
    return OTHER
end

-- The code points of `count` bytes (`at(i)`, 0-based) read as UTF-8, with the byte offset and length of each; a
-- byte that starts no valid sequence is a code point of its own that is no digit or separator (-1).
local function decode_utf8(at, count)
    local points, starts, lengths = {}, {}, {}
    local i = 0
    while i < count do
        local b = at(i)
        local cp, length = (b < 0x80) and b or -1, 1
        local function continuation(k)
            if i + k >= count then return nil end
            local c = at(i + k)
            return (c >= 0x80 and c <= 0xBF) and (c - 0x80) or nil
        end
        if b >= 0xC2 and b <= 0xDF then
            local c1 = continuation(1)
            if c1 then cp, length = (b - 0xC0) * 64 + c1, 2 end
        elseif b >= 0xE0 and b <= 0xEF then
            local c1, c2 = continuation(1), continuation(2)
            if c1 and c2 then
                local value = (b - 0xE0) * 4096 + c1 * 64 + c2
                if value >= 0x800 and (value < 0xD800 or value > 0xDFFF) then cp, length = value, 3 end
            end
        elseif b >= 0xF0 and b <= 0xF4 then
            local c1, c2, c3 = continuation(1), continuation(2), continuation(3)
            if c1 and c2 and c3 then
                local value = (b - 0xF0) * 262144 + c1 * 4096 + c2 * 64 + c3
                if value >= 0x10000 and value <= 0x10FFFF then cp, length = value, 4 end
            end
        end
        points[#points + 1], starts[#starts + 1], lengths[#lengths + 1] = cp, i, length
        i = i + length
    end
    return points, starts, lengths
end

local function is_hex(cp)
    return (cp >= 48 and cp <= 57) or (cp >= 97 and cp <= 102) or (cp >= 65 and cp <= 70)
end

-- Ranges of letters beyond ASCII, near enough to Unicode's Alphabetic property for telling whether a hex id stands
-- alone: the punctuation and symbols around text (« », “ ”, €, →, emoji) are outside them.
local letter_ranges = {
    { 0x00AA, 0x00AA }, { 0x00B5, 0x00B5 }, { 0x00BA, 0x00BA }, { 0x00C0, 0x00D6 }, { 0x00D8, 0x00F6 },
    { 0x00F8, 0x02FF }, { 0x0370, 0x1FFF }, { 0x2C00, 0x2DFF }, { 0x3040, 0x9FFF }, { 0xA000, 0xD7FF },
    { 0xF900, 0xFDFF }, { 0xFE70, 0xFEFE }, { 0xFF21, 0xFF3A }, { 0xFF41, 0xFF5A }, { 0xFF66, 0xFFDC },
    { 0x10000, 0x1EFFF }, { 0x20000, 0x3FFFF },
}

local function is_alphanumeric(cp)
    if cp < 0 then return false end
    if cp < 0x80 then return (cp >= 48 and cp <= 57) or (cp >= 65 and cp <= 90) or (cp >= 97 and cp <= 122) end
    local kind = kind_of(cp)
    if kind == DIGIT then return true end
    if kind ~= OTHER then return false end
    for _, range in ipairs(letter_ranges) do
        if cp >= range[1] and cp <= range[2] then return true end
    end
    return false
end

-- Whether `group` (positions) is 13 digits that do not start with a 4: no card number, a time in milliseconds.
local function short_of_a_visa_number(points, group)
    return #group == 13 and digit_value(points[group[1]]) ~= 4
end

-- `DNITHE` and 26 ASCII digits at positions lo..hi-1.
local function visa_token_reference(points, lo, hi)
    if hi - lo ~= 26 or lo <= 6 then return false end
    local prefix = { 68, 78, 73, 84, 72, 69 }
    for k = 1, 6 do
        if points[lo - 7 + k] ~= prefix[k] then return false end
    end
    for k = lo, hi - 1 do
        if points[k] < 48 or points[k] > 57 then return false end
    end
    return true
end

-- Whether the digits at lo..hi-1 lie inside a hex identifier: a digest standing alone (32, 40, 64 or 128 hex
-- characters, at least one a letter) or a Mastercard token reference id (`DWSPMC` and 32 hex characters).
local function hex_identifier_part(points, lo, hi, n)
    for k = lo, hi - 1 do
        if not is_hex(points[k]) then return false end
    end
    -- No id taken whole is longer than 128 hex characters (and `DWSPMC`): the scan stops there, or a long stretch
    -- of hex text with many runs of digits was scanned again for each, in quadratic time.
    local longest = 128 + 6
    local first, stop = lo, hi
    while first > 1 and is_hex(points[first - 1]) and hi - first <= longest do first = first - 1 end
    while stop <= n and is_hex(points[stop]) and stop - first <= longest do stop = stop + 1 end
    if stop - first > longest then return false end
    if stop <= n and is_alphanumeric(points[stop]) then return false end
    if first == 1 or not is_alphanumeric(points[first - 1]) then
        local letter = false
        for k = first, stop - 1 do
            if points[k] > 57 then letter = true end
        end
        local length = stop - first
        return letter and (length == 32 or length == 40 or length == 64 or length == 128)
    end
    -- `DWSPMC` and 32 hex characters: the prefix's `C` is a hex letter, so the scan took it in.
    local prefix = { 68, 87, 83, 80, 77, 67 }
    local prefix_start = first - 5
    if prefix_start < 1 or stop - (first + 1) ~= 32 then return false end
    for k = 1, 6 do
        if points[prefix_start + k - 1] ~= prefix[k] then return false end
    end
    return prefix_start == 1 or not is_alphanumeric(points[prefix_start - 1])
end

-- The first position of the UUID (8, 4, 4, 4 and 12 hex characters joined by hyphens, standing alone) that the
-- digits at lo..hi-1 lie inside, or nil.
local function uuid_around(points, lo, hi, n)
    local function part(cp) return is_hex(cp) or cp == 45 end
    if hi - lo > 36 then return nil end
    for k = lo, hi - 1 do
        if not part(points[k]) then return nil end
    end
    -- The UUID may have hyphens of the text around it (`test-123e4567-…`): each 36-character window that holds the
    -- run is tried.
    for first = math.max(1, hi - 36), lo do
        local stop = first + 36
        if stop - 1 <= n and not (first > 1 and is_alphanumeric(points[first - 1]))
            and not (stop <= n and is_alphanumeric(points[stop])) then
            local fits = true
            for offset = 0, 35 do
                local hyphen = offset == 8 or offset == 13 or offset == 18 or offset == 23
                local cp = points[first + offset]
                if hyphen then
                    if cp ~= 45 then fits = false break end
                elseif not is_hex(cp) then
                    fits = false
                    break
                end
            end
            if fits then return first end
        end
    end
    return nil
end

local function passes_luhn(values, first, last)
    local sum = 0
    for offset = 0, last - first do
        local value = values[last - offset]
        if offset % 2 == 1 then
            value = value * 2
            if value > 9 then value = value - 9 end
        end
        sum = sum + value
    end
    return sum % 10 == 0
end

-- Whether whole groups of the UUID at `first`, next to each other and all digits, make a number of 13 to 19 digits
-- that passes the Luhn check: how a card number is written into one.
local function uuid_holds_card_number(points, first)
    local bounds = { { 0, 8 }, { 9, 13 }, { 14, 18 }, { 19, 23 }, { 24, 36 } }
    local numeric = {}
    for g, bound in ipairs(bounds) do
        numeric[g] = true
        for k = bound[1], bound[2] - 1 do
            local cp = points[first + k]
            if cp < 48 or cp > 57 then numeric[g] = false end
        end
    end
    for start = 1, 5 do
        local values = {}
        for g = start, 5 do
            if not numeric[g] then break end
            for k = bounds[g][1], bounds[g][2] - 1 do values[#values + 1] = points[first + k] - 48 end
            if #values >= 13 and #values <= 19 and passes_luhn(values, 1, #values) then return true end
        end
    end
    return false
end

-- Whether some 13 to 19 consecutive digits at lo..hi-1 pass the Luhn check.
local function holds_luhn_valid_number(points, lo, hi)
    local values = {}
    for k = lo, hi - 1 do values[#values + 1] = digit_value(points[k]) or 0 end
    for first = 1, #values do
        for length = 13, 19 do
            if first + length - 1 > #values then break end
            if passes_luhn(values, first, first + length - 1) then return true end
        end
    end
    return false
end

-- The digits to mask of groups split by punctuation: those of every stretch of consecutive groups that looks like a
-- card number's (13–19 digits in groups of at least three), but its last four.
local function card_number_groups(points, groups, masked)
    if #groups <= 1 then return end
    local digits = {}
    for _, group in ipairs(groups) do
        for _, position in ipairs(group) do digits[#digits + 1] = position end
    end
    local covered, first = 0, 0
    for start = 1, #groups do
        if not short_of_a_visa_number(points, groups[start]) then
            local length, longest = 0, 0
            for k = start, #groups do
                local group = groups[k]
                if #group < 3 or length + #group > 19 or short_of_a_visa_number(points, group) then break end
                length = length + #group
                if length >= 13 then longest = length end
            end
            if longest > 0 then
                local stop = first + longest - 4
                if stop > covered then
                    for k = math.max(first, covered) + 1, stop do masked[#masked + 1] = digits[k] end
                    covered = stop
                end
            end
        end
        first = first + #groups[start]
    end
end

-- A stretch split around its groups of 13 digits that do not start with a 4 (times), each a stretch of its own.
local function split_at_times(points, stretch)
    local timed = false
    for _, group in ipairs(stretch.groups) do
        if short_of_a_visa_number(points, group) then timed = true end
    end
    if #stretch.groups <= 1 or not timed then return { stretch } end
    local parts, current = {}, {}
    local function close()
        if #current > 0 then parts[#parts + 1] = { groups = current, dotted = stretch.dotted } end
        current = {}
    end
    for _, group in ipairs(stretch.groups) do
        if short_of_a_visa_number(points, group) then
            close()
            parts[#parts + 1] = { groups = { group }, dotted = stretch.dotted }
        else
            current[#current + 1] = group
        end
    end
    close()
    return parts
end

-- A stretch split around the IPv4 addresses in it (four groups of one to three ASCII digits joined by single full
-- stops, joined by none to more groups), each a dotted stretch of its own; not when some 13 to 19 of the stretch's
-- digits in a row, an address's among them, pass the Luhn check (PANMasking.swift, `splitAtAddresses`).
local function split_at_addresses(points, stretch)
    local groups, joins = stretch.groups, stretch.dot_joins or {}
    if #groups <= 4 or #joins ~= #groups - 1 then return { stretch } end
    local values = {}
    for _, group in ipairs(groups) do
        for _, position in ipairs(group) do
            local cp = points[position]
            if cp < 48 or cp > 57 then return { stretch } end
            values[#values + 1] = cp - 48
        end
    end
    -- An address's part: 0 to 255, written without a leading zero.
    local function octet(group)
        if #group < 1 or #group > 3 then return false end
        local value = 0
        for _, position in ipairs(group) do value = value * 10 + points[position] - 48 end
        return value <= 255 and (#group == 1 or points[group[1]] ~= 48)
    end
    local addresses, index = {}, 1
    while index + 3 <= #groups do
        local address = true
        for k = index, index + 3 do
            if not octet(groups[k]) then address = false end
        end
        for k = index, index + 2 do
            if not joins[k] then address = false end
        end
        if index > 1 and joins[index - 1] then address = false end
        if index + 3 < #groups and joins[index + 3] then address = false end
        if address then
            addresses[#addresses + 1] = index
            index = index + 4
        else
            index = index + 1
        end
    end
    if #addresses == 0 then return { stretch } end
    -- A card number may run across an address's edge, or be written as two addresses: 13 to 19 digits in a row
    -- that pass the Luhn check, some of them an address's, keep the stretch whole.
    local in_address = {}
    for g, group in ipairs(groups) do
        local inside = false
        for _, first in ipairs(addresses) do
            if g >= first and g <= first + 3 then inside = true end
        end
        for _ = 1, #group do in_address[#in_address + 1] = inside end
    end
    for first = 1, #values do
        for length = 13, 19 do
            local last = first + length - 1
            if last <= #values then
                local touches = false
                for k = first, last do
                    if in_address[k] then touches = true end
                end
                if touches and passes_luhn(values, first, last) then return { stretch } end
            end
        end
    end
    local parts, next_group = {}, 1
    local function slice(from, to, dotted)
        local part = {}
        for k = from, to do part[#part + 1] = groups[k] end
        parts[#parts + 1] = { groups = part, dotted = dotted }
    end
    for _, first in ipairs(addresses) do
        if next_group < first then slice(next_group, first - 1, false) end
        slice(first, first + 3, true)
        next_group = first + 4
    end
    if next_group <= #groups then slice(next_group, #groups, false) end
    return parts
end

-- The positions (1-based, among `points`) of the digits to mask.
local function masked_points(points)
    local n = #points
    local kinds = {}
    for k = 1, n do kinds[k] = kind_of(points[k]) end
    -- The length of the gap at i that joins digit groups, and whether it holds punctuation (which joins only
    -- groups that look like a card number's): separators, with at most two punctuation characters among them, up
    -- to WIDEST_GAP long. A comma, semicolon or bar with anything beside it ends the run (a list, a table's row).
    local function joint(i)
        local stop, punctuation, list_mark = i, 0, false
        while stop <= n and stop - i <= WIDEST_GAP do
            local kind = kinds[stop]
            if kind == DIGIT then
                if stop == i then return nil end
                if list_mark and stop - i > 1 then return nil end
                return stop - i, punctuation > 0
            elseif kind == PUNCTUATION then
                punctuation = punctuation + 1
                if is_list_mark(points[stop]) then list_mark = true end
                if punctuation > 2 then return nil end
            elseif kind ~= SEPARATOR and kind ~= DOT then
                return nil
            end
            stop = stop + 1
        end
        return nil
    end
    local masked = {}
    local index = 1
    while index <= n do
        if kinds[index] ~= DIGIT then
            index = index + 1
        else
            local run_end, run_digits = index, 0
            while run_end <= n do
                if kinds[run_end] == DIGIT then
                    run_digits, run_end = run_digits + 1, run_end + 1
                else
                    local length = joint(run_end)
                    if not length then break end
                    run_end = run_end + length
                end
            end
            if run_digits < 13 then
                index = run_end
            else
                local stop = index
                local groups = { {} }
                local stretches = { { groups = { {} }, dotted = true } }
                while stop <= n do
                    local current = kinds[stop]
                    if current == DIGIT then
                        local group = groups[#groups]
                        group[#group + 1] = stop
                        local stretch = stretches[#stretches]
                        local stretch_group = stretch.groups[#stretch.groups]
                        stretch_group[#stretch_group + 1] = stop
                        stop = stop + 1
                    else
                        local length, punctuated = joint(stop)
                        if not length then break end
                        groups[#groups + 1] = {}
                        -- Combining marks over a digit (a keycap's two) split nothing: a gap of them is one.
                        local marks_only = true
                        for k = stop, stop + length - 1 do
                            if not is_mark(points[k]) then marks_only = false end
                        end
                        if punctuated or (length > 1 and not marks_only) then
                            stretches[#stretches + 1] = { groups = { {} }, dotted = true }
                        else
                            local stretch = stretches[#stretches]
                            stretch.groups[#stretch.groups + 1] = {}
                            stretch.dot_joins = stretch.dot_joins or {}
                            stretch.dot_joins[#stretch.dot_joins + 1] = length == 1 and points[stop] == 46
                            if current ~= DOT then stretch.dotted = false end
                        end
                        stop = stop + length
                    end
                end
                local whole = #groups == 1 and (visa_token_reference(points, index, stop)
                    or (hex_identifier_part(points, index, stop, n)
                        and not holds_luhn_valid_number(points, index, stop)))
                if not whole then
                    local uuid = uuid_around(points, index, stop, n)
                    whole = uuid ~= nil and not uuid_holds_card_number(points, uuid)
                end
                if not whole then
                    local between = {}
                    local split = {}
                    for _, stretch in ipairs(stretches) do
                        for _, part in ipairs(split_at_addresses(points, stretch)) do split[#split + 1] = part end
                    end
                    for _, stretch in ipairs(split) do
                        for _, part in ipairs(split_at_times(points, stretch)) do
                            local digits = {}
                            for _, group in ipairs(part.groups) do
                                for _, position in ipairs(group) do digits[#digits + 1] = position end
                            end
                            if #digits >= 13 and not (#part.groups == 1 and short_of_a_visa_number(points, digits)) then
                                card_number_groups(points, between, masked)
                                between = {}
                                for k = 1, #digits - 4 do masked[#masked + 1] = digits[k] end
                            elseif part.dotted and #part.groups == 4 and #digits <= 12 then
                                card_number_groups(points, between, masked)
                                between = {}
                            else
                                for _, group in ipairs(part.groups) do between[#between + 1] = group end
                            end
                        end
                    end
                    card_number_groups(points, between, masked)
                end
                index = stop
            end
        end
    end
    return masked
end

-- An asterisk of each length in UTF-8 bytes, for a masked digit of that length: `*`; the Arabic five-pointed star
-- (U+066D, for the two-byte digits, most of them Arabic-Indic); the fullwidth asterisk (U+FF0A, for fullwidth
-- digits); `*` and a word joiner (U+2060), which shows nothing, for the digits beyond the first plane.
local asterisks = {
    { 0x2A }, { 0xD9, 0xAD }, { 0xEF, 0xBC, 0x8A }, { 0x2A, 0xE2, 0x81, 0xA0 },
}

-- The bytes to replace among the `count` bytes `at` gives, read as UTF-8 text, as { 0-based offset, new byte }
-- pairs: each masked digit becomes an asterisk of its own length in bytes, so that the text keeps its length and
-- every field stays where it was.
local function card_number_digits(at, count)
    local points, starts, lengths = decode_utf8(at, count)
    local replaced = {}
    for _, point in ipairs(masked_points(points)) do
        local asterisk = asterisks[lengths[point]]
        for k = 0, lengths[point] - 1 do replaced[#replaced + 1] = { starts[point] + k, asterisk[k + 1] } end
    end
    return replaced
end

local function masked_text(value)
    local replaced = card_number_digits(function(i) return value:byte(i + 1) end, #value)
    if #replaced == 0 then return value end
    local bytes = { value:byte(1, -1) }
    for _, change in ipairs(replaced) do bytes[change[1] + 1] = change[2] end
    local parts = {}
    for k = 1, #bytes, 4096 do parts[#parts + 1] = string.char(table.unpack(bytes, k, math.min(k + 4095, #bytes))) end
    return table.concat(parts)
end

-- The schema behind the masking: every message type's text, secret and message fields by number, and every
-- method's request and response types. Secret fields (the text and bytes fields named in Tools/protoc-gen-tokenet-swift's
-- SECRET_FIELD_NAMES, as the CLI's decoders mask them: Sources/tokenet/SecretFields.swift) show as asterisks whole.
-- BEGIN generated by Tools/gen-protos
local message_fields = {
    ["tokenet.bench.v1.EchoRequest"] = { [1] = "b" },
    ["tokenet.bench.v1.EchoResponse"] = { [1] = "b" },
    ["tokenet.card.v1.DeviceInfo"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "s", [5] = "s" },
    ["tokenet.card.v1.EncryptedCardData"] = { [1] = "s", [2] = "s" },
    ["tokenet.card.v1.IdvMethod"] = { [1] = "s", [3] = "s", [4] = "s", [5] = "s" },
    ["tokenet.card.v1.TermsAndConditions"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "s" },
    ["tokenet.health.v1.HealthCheckRequest"] = { [1] = "s" },
    ["tokenet.issuer.v1.ActivateLinkedRequest"] = { [1] = "s", [2] = "x" },
    ["tokenet.issuer.v1.ActivateLinkedResponse"] = { [1] = "tokenet.issuer.v1.LinkedAccountResult" },
    ["tokenet.issuer.v1.AppAccount"] = { [1] = "s", [2] = "s" },
    ["tokenet.issuer.v1.AppAccountsRequest"] = { [1] = "s" },
    ["tokenet.issuer.v1.AppAccountsResponse"] = { [1] = "tokenet.issuer.v1.AppAccount" },
    ["tokenet.issuer.v1.AppActivateRequest"] = { [1] = "x", [2] = "s", [3] = "s", [4] = "x", [5] = "x" },
    ["tokenet.issuer.v1.AppActivateResponse"] = { [2] = "s", [3] = "s", [6] = "s" },
    ["tokenet.issuer.v1.AppAnswerAuthnRequest"] = { [1] = "s", [3] = "x" },
    ["tokenet.issuer.v1.AppAnswerAuthnResponse"] = { [1] = "s", [2] = "s", [4] = "s" },
    ["tokenet.issuer.v1.AppAuthn"] = { [1] = "s", [3] = "s", [4] = "s", [5] = "s", [6] = "s" },
    ["tokenet.issuer.v1.AppCard"] = { [1] = "s", [3] = "s" },
    ["tokenet.issuer.v1.AppCardIdentity"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "s" },
    ["tokenet.issuer.v1.AppDeleteAccountRequest"] = { [1] = "s", [2] = "s", [3] = "x" },
    ["tokenet.issuer.v1.AppLoginRequest"] = { [1] = "s", [2] = "x" },
    ["tokenet.issuer.v1.AppLoginResponse"] = { [1] = "x", [3] = "s", [4] = "s" },
    ["tokenet.issuer.v1.AppNotification"] = { [2] = "s", [3] = "s", [5] = "s", [6] = "tokenet.tsp.v1.Notification" },
    ["tokenet.issuer.v1.AppNotificationsRequest"] = { [2] = "s" },
    ["tokenet.issuer.v1.AppNotificationsResponse"] = { [1] = "tokenet.issuer.v1.AppNotification", [2] = "tokenet.issuer.v1.AppAuthn", [3] = "tokenet.issuer.v1.AppCardIdentity", [4] = "s" },
    ["tokenet.issuer.v1.AuthorizeAppSessionRequest"] = { [1] = "s", [2] = "x" },
    ["tokenet.issuer.v1.AuthorizeAppSessionResponse"] = { [1] = "s", [3] = "s", [6] = "s" },
    ["tokenet.issuer.v1.AuthorizeDigitizationRequest"] = { [1] = "tokenet.card.v1.EncryptedCardData", [2] = "s", [3] = "s", [4] = "s", [6] = "tokenet.card.v1.DeviceInfo", [7] = "tokenet.card.v1.WalletRiskData", [8] = "s", [9] = "s", [10] = "tokenet.issuer.v1.HeldSuspension", [11] = "s", [13] = "s" },
    ["tokenet.issuer.v1.AuthorizeDigitizationResponse"] = { [2] = "s", [3] = "tokenet.card.v1.IdvMethod", [4] = "s" },
    ["tokenet.issuer.v1.CallCentreActivateRequest"] = { [1] = "s" },
    ["tokenet.issuer.v1.CardEligibilityRequest"] = { [1] = "tokenet.card.v1.EncryptedCardData", [3] = "s" },
    ["tokenet.issuer.v1.CardEligibilityResponse"] = { [2] = "s" },
    ["tokenet.issuer.v1.CardViewResponse"] = { [2] = "s", [4] = "tokenet.issuer.v1.AppCard", [6] = "s" },
    ["tokenet.issuer.v1.EnrollRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.issuer.v1.EnrollResponse"] = { [1] = "s", [3] = "s" },
    ["tokenet.issuer.v1.HeldSuspension"] = { [1] = "s", [2] = "s", [3] = "s" },
    ["tokenet.issuer.v1.IssuerCard"] = { [1] = "s", [2] = "s", [4] = "s", [5] = "s", [6] = "s", [7] = "s", [8] = "tokenet.issuer.v1.PendingCardRenewal", [9] = "s", [10] = "s", [11] = "s", [12] = "tokenet.issuer.v1.PendingTokenChange" },
    ["tokenet.issuer.v1.IssuerChangeTokenStatesRequest"] = { [1] = "s", [3] = "s", [4] = "s" },
    ["tokenet.issuer.v1.IssuerChangeTokenStatesResponse"] = { [1] = "tokenet.tsp.v1.TokenStateResult" },
    ["tokenet.issuer.v1.IssuerRenewCardRequest"] = { [1] = "s", [2] = "s", [3] = "s" },
    ["tokenet.issuer.v1.IssuerRenewCardResponse"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "s", [6] = "s" },
    ["tokenet.issuer.v1.IssuerSendMessageRequest"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "s" },
    ["tokenet.issuer.v1.IssuerSendMessageResponse"] = { [1] = "s" },
    ["tokenet.issuer.v1.IssuerSetCardStatusRequest"] = { [1] = "s", [3] = "s" },
    ["tokenet.issuer.v1.IssuerSetCardStatusResponse"] = { [1] = "s", [3] = "s", [5] = "tokenet.tsp.v1.TokenStateResult" },
    ["tokenet.issuer.v1.LinkedAccountResult"] = { [1] = "s", [3] = "s" },
    ["tokenet.issuer.v1.ListCardsRequest"] = { [2] = "s" },
    ["tokenet.issuer.v1.ListCardsResponse"] = { [1] = "tokenet.issuer.v1.IssuerCard", [2] = "s" },
    ["tokenet.issuer.v1.OpenAppRequest"] = { [1] = "s", [2] = "s", [3] = "s" },
    ["tokenet.issuer.v1.OpenAppResponse"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "s" },
    ["tokenet.issuer.v1.OutboxMessage"] = { [2] = "s", [3] = "s", [4] = "s", [5] = "s" },
    ["tokenet.issuer.v1.OutboxRequest"] = { [1] = "s" },
    ["tokenet.issuer.v1.OutboxResponse"] = { [1] = "tokenet.issuer.v1.OutboxMessage" },
    ["tokenet.issuer.v1.PendingCardRenewal"] = { [1] = "s", [2] = "s" },
    ["tokenet.issuer.v1.PendingTokenChange"] = { [2] = "s" },
    ["tokenet.issuer.v1.PushCardRequest"] = { [1] = "s", [3] = "s", [4] = "s" },
    ["tokenet.issuer.v1.PushCardResponse"] = { [1] = "tokenet.issuer.v1.PushReceipt", [2] = "s" },
    ["tokenet.issuer.v1.PushReceipt"] = { [2] = "x" },
    ["tokenet.issuer.v1.SendOtpRequest"] = { [1] = "s", [2] = "s", [4] = "x" },
    ["tokenet.issuer.v1.SendOtpResponse"] = { [1] = "s" },
    ["tokenet.issuer.v1.UnlockRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.reflection.v1.DescribeSymbolRequest"] = { [1] = "s" },
    ["tokenet.reflection.v1.DescribeSymbolResponse"] = { [2] = "s", [3] = "tokenet.reflection.v1.ServiceDescription", [4] = "tokenet.reflection.v1.MessageDescription", [5] = "tokenet.reflection.v1.EnumDescription" },
    ["tokenet.reflection.v1.EnumDescription"] = { [1] = "s", [2] = "tokenet.reflection.v1.EnumValueDescription", [3] = "s" },
    ["tokenet.reflection.v1.EnumValueDescription"] = { [1] = "s", [3] = "s" },
    ["tokenet.reflection.v1.FieldDescription"] = { [1] = "s", [2] = "s", [4] = "s", [8] = "s", [9] = "tokenet.reflection.v1.EnumValueDescription", [10] = "s" },
    ["tokenet.reflection.v1.ListServicesResponse"] = { [1] = "s" },
    ["tokenet.reflection.v1.MessageDescription"] = { [1] = "s", [2] = "tokenet.reflection.v1.FieldDescription", [3] = "s" },
    ["tokenet.reflection.v1.MethodDescription"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "s", [7] = "s", [8] = "s" },
    ["tokenet.reflection.v1.ServiceDescription"] = { [1] = "s", [2] = "tokenet.reflection.v1.MethodDescription", [3] = "s" },
    ["tokenet.testing.v1.Choice"] = { [2] = "s", [3] = "b", [5] = "tokenet.testing.v1.Scalars", [6] = "tokenet.testing.v1.Choice.Nested", [7] = "tokenet.testing.v1.Choice.Nested.Inner" },
    ["tokenet.testing.v1.Choice.Nested"] = { [1] = "s", [2] = "tokenet.testing.v1.Choice.Nested.Inner" },
    ["tokenet.testing.v1.Presence"] = { [2] = "s", [4] = "tokenet.testing.v1.Scalars" },
    ["tokenet.testing.v1.Repeated"] = { [14] = "s", [15] = "b", [17] = "tokenet.testing.v1.Scalars" },
    ["tokenet.testing.v1.Scalars"] = { [1] = "d", [14] = "s", [15] = "b" },
    ["tokenet.tsp.v1.AcknowledgeRequest"] = { [1] = "s" },
    ["tokenet.tsp.v1.ActivateDigitalCardRequest"] = { [1] = "s", [2] = "x" },
    ["tokenet.tsp.v1.ActivateTokenRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.Activation"] = { [1] = "s", [2] = "x", [3] = "s", [4] = "s" },
    ["tokenet.tsp.v1.AnswerAuthnRequest"] = { [1] = "s" },
    ["tokenet.tsp.v1.AnswerAuthnResponse"] = { [1] = "s", [2] = "s", [3] = "s", [5] = "s" },
    ["tokenet.tsp.v1.AuthnBody"] = { [1] = "s", [3] = "s", [4] = "s" },
    ["tokenet.tsp.v1.BinRange"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.CardRenewalBody"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "s" },
    ["tokenet.tsp.v1.CardStateBody"] = { [2] = "s", [3] = "s", [4] = "s", [6] = "tokenet.tsp.v1.TokenSuspension" },
    ["tokenet.tsp.v1.ChangeIssuerTokenStatesRequest"] = { [1] = "s", [3] = "s" },
    ["tokenet.tsp.v1.ChangeIssuerTokenStatesResponse"] = { [1] = "tokenet.tsp.v1.TokenStateResult" },
    ["tokenet.tsp.v1.ChangeTokenStateRequest"] = { [1] = "s", [3] = "s" },
    ["tokenet.tsp.v1.ChangeTokenStateResponse"] = { [1] = "s" },
    ["tokenet.tsp.v1.CheckEligibilityRequest"] = { [1] = "s", [2] = "tokenet.tsp.v1.EligibilityData", [3] = "s", [4] = "tokenet.card.v1.DeviceInfo", [5] = "tokenet.card.v1.EncryptedCardData", [6] = "tokenet.tsp.v1.IssuerPushReceipt", [7] = "s" },
    ["tokenet.tsp.v1.CheckEligibilityResponse"] = { [3] = "s", [4] = "tokenet.card.v1.TermsAndConditions", [5] = "tokenet.tsp.v1.NoTermsRequired", [6] = "s", [9] = "s" },
    ["tokenet.tsp.v1.CreatePushReceiptRequest"] = { [1] = "tokenet.card.v1.EncryptedCardData", [2] = "s", [3] = "s" },
    ["tokenet.tsp.v1.CreatePushReceiptResponse"] = { [2] = "x" },
    ["tokenet.tsp.v1.CreatePushSessionRequest"] = { [1] = "tokenet.card.v1.EncryptedCardData", [2] = "s", [3] = "s" },
    ["tokenet.tsp.v1.CreatePushSessionResponse"] = { [1] = "s" },
    ["tokenet.tsp.v1.DigitizeRequest"] = { [1] = "s", [2] = "s", [3] = "s", [5] = "tokenet.card.v1.DeviceInfo", [6] = "s", [7] = "tokenet.card.v1.WalletRiskData", [8] = "s" },
    ["tokenet.tsp.v1.DigitizeResponse"] = { [2] = "s", [4] = "s", [5] = "s", [7] = "s", [8] = "tokenet.card.v1.IdvMethod", [9] = "s", [10] = "s", [11] = "s", [12] = "s", [14] = "s" },
    ["tokenet.tsp.v1.EligibilityData"] = { [1] = "s" },
    ["tokenet.tsp.v1.EncryptionKey"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.ForgetEncryptionKeyRequest"] = { [1] = "s" },
    ["tokenet.tsp.v1.ForgetEncryptionKeyResponse"] = { [1] = "tokenet.tsp.v1.EncryptionKey" },
    ["tokenet.tsp.v1.FundingCard"] = { [1] = "s", [3] = "s", [4] = "s", [7] = "s" },
    ["tokenet.tsp.v1.GetEncryptionKeysResponse"] = { [1] = "tokenet.tsp.v1.EncryptionKey" },
    ["tokenet.tsp.v1.GetFundingCardsRequest"] = { [1] = "s", [2] = "tokenet.card.v1.EncryptedCardData" },
    ["tokenet.tsp.v1.GetFundingCardsResponse"] = { [1] = "tokenet.tsp.v1.FundingCard" },
    ["tokenet.tsp.v1.GetIssuerTokensRequest"] = { [2] = "s", [3] = "s" },
    ["tokenet.tsp.v1.GetIssuerTokensResponse"] = { [1] = "tokenet.tsp.v1.IssuerToken", [2] = "s" },
    ["tokenet.tsp.v1.GetTokenIssuerRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.GetTokenIssuerResponse"] = { [1] = "s", [2] = "s", [3] = "s" },
    ["tokenet.tsp.v1.GetTokenStatesRequest"] = { [2] = "s", [3] = "s" },
    ["tokenet.tsp.v1.GetTokenStatesResponse"] = { [1] = "tokenet.tsp.v1.WalletTokenState", [2] = "s" },
    ["tokenet.tsp.v1.HotpCredential"] = { [1] = "s", [2] = "x" },
    ["tokenet.tsp.v1.IssuerPushReceipt"] = { [2] = "x" },
    ["tokenet.tsp.v1.IssuerToken"] = { [1] = "s", [5] = "tokenet.tsp.v1.StandInAdviceBody" },
    ["tokenet.tsp.v1.ListTokensRequest"] = { [1] = "s", [3] = "s", [4] = "s", [5] = "s" },
    ["tokenet.tsp.v1.ListTokensResponse"] = { [1] = "tokenet.tsp.v1.TokenSummary", [2] = "s" },
    ["tokenet.tsp.v1.ListTransactionsRequest"] = { [1] = "s", [3] = "s" },
    ["tokenet.tsp.v1.ListTransactionsResponse"] = { [1] = "tokenet.tsp.v1.TspTransaction", [2] = "s" },
    ["tokenet.tsp.v1.LoginRequest"] = { [1] = "s", [2] = "x", [3] = "s", [4] = "x" },
    ["tokenet.tsp.v1.LoginResponse"] = { [2] = "x", [4] = "s", [6] = "s" },
    ["tokenet.tsp.v1.MessagingBody"] = { [1] = "s", [2] = "s", [3] = "s" },
    ["tokenet.tsp.v1.Notification"] = { [1] = "s", [3] = "s", [4] = "s", [5] = "s", [6] = "s", [10] = "s", [20] = "tokenet.tsp.v1.CardStateBody", [21] = "tokenet.tsp.v1.ReplenishmentBody", [22] = "tokenet.tsp.v1.TransactionBody", [23] = "tokenet.tsp.v1.AuthnBody", [24] = "tokenet.tsp.v1.CardRenewalBody", [25] = "tokenet.tsp.v1.MessagingBody", [26] = "tokenet.tsp.v1.StandInAdviceBody", [30] = "b" },
    ["tokenet.tsp.v1.PublishRequest"] = { [1] = "tokenet.tsp.v1.Notification", [2] = "s" },
    ["tokenet.tsp.v1.PublishResponse"] = { [1] = "s" },
    ["tokenet.tsp.v1.QueueStatusRequest"] = { [1] = "s" },
    ["tokenet.tsp.v1.QueueStatusResponse"] = { [1] = "s" },
    ["tokenet.tsp.v1.RegisterEnrolmentRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.RegisterEnrolmentResponse"] = { [1] = "tokenet.tsp.v1.Activation" },
    ["tokenet.tsp.v1.RegisterIssuerRequest"] = { [1] = "s", [2] = "s", [3] = "tokenet.tsp.v1.BinRange", [4] = "s", [5] = "s" },
    ["tokenet.tsp.v1.RegisterIssuerResponse"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.RemoveCredentialsRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.RenewCardRequest"] = { [1] = "s", [2] = "tokenet.card.v1.EncryptedCardData", [3] = "s", [4] = "s" },
    ["tokenet.tsp.v1.RenewCardResponse"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "tokenet.tsp.v1.TokenStateResult" },
    ["tokenet.tsp.v1.ReplenishPaymentKeysRequest"] = { [1] = "s", [3] = "s" },
    ["tokenet.tsp.v1.ReplenishPaymentKeysResponse"] = { [1] = "s" },
    ["tokenet.tsp.v1.RequestReplenishmentRequest"] = { [1] = "s" },
    ["tokenet.tsp.v1.RequestReplenishmentResponse"] = { [1] = "s" },
    ["tokenet.tsp.v1.ResendOtpRequest"] = { [1] = "s" },
    ["tokenet.tsp.v1.ResendOtpResponse"] = { [3] = "tokenet.card.v1.IdvMethod" },
    ["tokenet.tsp.v1.ResyncRequest"] = { [1] = "s", [2] = "x", [3] = "x" },
    ["tokenet.tsp.v1.ResyncResponse"] = { [3] = "s" },
    ["tokenet.tsp.v1.RotateEncryptionKeyResponse"] = { [1] = "tokenet.tsp.v1.EncryptionKey", [2] = "s" },
    ["tokenet.tsp.v1.SelectIdvMethodRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.SelectIdvMethodResponse"] = { [1] = "tokenet.card.v1.IdvMethod", [5] = "s" },
    ["tokenet.tsp.v1.SendCardMessageRequest"] = { [1] = "s", [2] = "s", [3] = "s", [4] = "s" },
    ["tokenet.tsp.v1.SendCardMessageResponse"] = { [1] = "s" },
    ["tokenet.tsp.v1.SimulateTransactionRequest"] = { [1] = "s", [3] = "s", [4] = "s" },
    ["tokenet.tsp.v1.SimulateTransactionResponse"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.StandInAdviceBody"] = { [2] = "s", [3] = "tokenet.card.v1.EncryptedCardData", [4] = "s", [5] = "s", [7] = "tokenet.card.v1.DeviceInfo", [8] = "tokenet.card.v1.WalletRiskData", [9] = "s", [11] = "s", [13] = "s" },
    ["tokenet.tsp.v1.SubmitOtpRequest"] = { [1] = "s", [2] = "x" },
    ["tokenet.tsp.v1.SubscribeRequest"] = { [2] = "s" },
    ["tokenet.tsp.v1.TokenEvent"] = { [4] = "s", [5] = "s", [6] = "s" },
    ["tokenet.tsp.v1.TokenHistoryRequest"] = { [1] = "s", [3] = "s" },
    ["tokenet.tsp.v1.TokenHistoryResponse"] = { [1] = "tokenet.tsp.v1.TokenSummary", [2] = "tokenet.tsp.v1.TokenEvent", [3] = "s" },
    ["tokenet.tsp.v1.TokenStateResult"] = { [1] = "s", [4] = "s" },
    ["tokenet.tsp.v1.TokenSummary"] = { [1] = "s", [3] = "s", [4] = "s", [6] = "s", [7] = "s", [8] = "s", [9] = "s", [11] = "s" },
    ["tokenet.tsp.v1.TokenSuspension"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.TransactionBody"] = { [1] = "s", [3] = "s", [4] = "s", [7] = "s", [8] = "s" },
    ["tokenet.tsp.v1.TspTransaction"] = { [1] = "s", [2] = "s", [4] = "s", [5] = "s", [8] = "s", [9] = "s" },
    ["tokenet.tsp.v1.UnlockCredentialsRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.tsp.v1.VerifyActivationRequest"] = { [1] = "x", [2] = "s", [3] = "s", [4] = "s" },
    ["tokenet.tsp.v1.VerifyActivationResponse"] = { [3] = "s", [4] = "s", [5] = "s", [6] = "tokenet.tsp.v1.HotpCredential", [7] = "tokenet.tsp.v1.HotpCredential", [8] = "s" },
    ["tokenet.tsp.v1.VerifyActivationsRequest"] = { [1] = "tokenet.tsp.v1.VerifyActivationRequest" },
    ["tokenet.tsp.v1.VerifyActivationsResponse"] = { [1] = "tokenet.tsp.v1.VerifyActivationResponse" },
    ["tokenet.tsp.v1.WalletTokenState"] = { [1] = "s", [4] = "s" },
    ["tokenet.wallet.v1.AcceptTermsRequest"] = { [1] = "s" },
    ["tokenet.wallet.v1.AcceptTermsResponse"] = { [1] = "tokenet.wallet.v1.WalletCard", [2] = "tokenet.card.v1.IdvMethod", [3] = "s", [5] = "s" },
    ["tokenet.wallet.v1.AddCardRequest"] = { [1] = "tokenet.wallet.v1.ManualCard", [2] = "tokenet.wallet.v1.IssuerPushReceiptInput", [3] = "s", [4] = "s" },
    ["tokenet.wallet.v1.AddCardResponse"] = { [1] = "s", [3] = "s", [4] = "tokenet.card.v1.TermsAndConditions", [6] = "s", [7] = "s" },
    ["tokenet.wallet.v1.BankingAppActivationRequest"] = { [1] = "s", [3] = "s", [5] = "s" },
    ["tokenet.wallet.v1.CurrentTokensRequest"] = { [2] = "s" },
    ["tokenet.wallet.v1.CurrentTokensResponse"] = { [1] = "s", [2] = "tokenet.wallet.v1.TokenStatus", [3] = "s", [4] = "s" },
    ["tokenet.wallet.v1.IssuerPushReceiptInput"] = { [2] = "x" },
    ["tokenet.wallet.v1.ListWalletCardsRequest"] = { [2] = "s" },
    ["tokenet.wallet.v1.ListWalletCardsResponse"] = { [1] = "tokenet.wallet.v1.WalletCard", [2] = "s" },
    ["tokenet.wallet.v1.ManualCard"] = { [1] = "s", [2] = "s", [3] = "x", [4] = "s" },
    ["tokenet.wallet.v1.OpenIssuerAppRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.wallet.v1.OpenIssuerAppResponse"] = { [1] = "tokenet.wallet.v1.WalletCard", [2] = "s", [3] = "s", [4] = "s", [5] = "s", [6] = "s" },
    ["tokenet.wallet.v1.PaymentKeysRequest"] = { [1] = "s" },
    ["tokenet.wallet.v1.PaymentKeysResponse"] = { [1] = "s", [2] = "s", [7] = "s" },
    ["tokenet.wallet.v1.PushCardDataRequest"] = { [1] = "tokenet.card.v1.EncryptedCardData", [2] = "s" },
    ["tokenet.wallet.v1.PushCardDataResponse"] = { [1] = "s" },
    ["tokenet.wallet.v1.SelectCardRequest"] = { [1] = "s" },
    ["tokenet.wallet.v1.SelectionResponse"] = { [1] = "s", [2] = "s" },
    ["tokenet.wallet.v1.SetActiveWalletAccountRequest"] = { [1] = "s" },
    ["tokenet.wallet.v1.TokenStatus"] = { [1] = "s", [3] = "s", [4] = "s" },
    ["tokenet.wallet.v1.WalletCard"] = { [1] = "s", [2] = "s", [4] = "s", [5] = "s", [7] = "s", [8] = "s", [9] = "s", [10] = "s", [11] = "s" },
    ["tokenet.wallet.v1.WalletChangeCardStateRequest"] = { [1] = "s", [3] = "s" },
    ["tokenet.wallet.v1.WalletChangeCardStateResponse"] = { [1] = "tokenet.wallet.v1.WalletCard" },
    ["tokenet.wallet.v1.WalletEvent"] = { [3] = "s", [4] = "s", [7] = "s" },
    ["tokenet.wallet.v1.WalletInboxRequest"] = { [2] = "s" },
    ["tokenet.wallet.v1.WalletInboxResponse"] = { [1] = "tokenet.tsp.v1.Notification", [2] = "s" },
    ["tokenet.wallet.v1.WalletResendOtpRequest"] = { [1] = "s" },
    ["tokenet.wallet.v1.WalletResendOtpResponse"] = { [1] = "tokenet.wallet.v1.WalletCard", [4] = "tokenet.card.v1.IdvMethod" },
    ["tokenet.wallet.v1.WalletSelectIdvMethodRequest"] = { [1] = "s", [2] = "s" },
    ["tokenet.wallet.v1.WalletSelectIdvMethodResponse"] = { [1] = "tokenet.wallet.v1.WalletCard", [2] = "tokenet.card.v1.IdvMethod", [6] = "s" },
    ["tokenet.wallet.v1.WalletSubmitOtpRequest"] = { [1] = "s", [2] = "x" },
    ["tokenet.wallet.v1.WalletSubmitOtpResponse"] = { [1] = "tokenet.wallet.v1.WalletCard" },
    ["tokenet.wallet.v1.WalletTransaction"] = { [1] = "s", [2] = "s", [4] = "s", [5] = "s" },
    ["tokenet.wallet.v1.WalletTransactionsRequest"] = { [1] = "s", [3] = "s" },
    ["tokenet.wallet.v1.WalletTransactionsResponse"] = { [1] = "tokenet.wallet.v1.WalletTransaction", [2] = "s" },
    ["tokenet.wire.v1.CallStart"] = { [1] = "s", [2] = "tokenet.wire.v1.MetadataEntry" },
    ["tokenet.wire.v1.Cancel"] = { [1] = "s" },
    ["tokenet.wire.v1.Frame"] = { [2] = "tokenet.wire.v1.Hello", [3] = "tokenet.wire.v1.CallStart", [4] = "tokenet.wire.v1.Message", [5] = "tokenet.wire.v1.HalfClose", [6] = "tokenet.wire.v1.Status", [7] = "tokenet.wire.v1.Cancel", [8] = "tokenet.wire.v1.Ping", [9] = "tokenet.wire.v1.Pong", [10] = "tokenet.wire.v1.GoAway", [11] = "tokenet.wire.v1.WindowUpdate" },
    ["tokenet.wire.v1.GoAway"] = { [3] = "s" },
    ["tokenet.wire.v1.Hello"] = { [2] = "tokenet.wire.v1.Settings", [3] = "s" },
    ["tokenet.wire.v1.Message"] = { [1] = "b" },
    ["tokenet.wire.v1.MetadataEntry"] = { [1] = "s", [2] = "s", [3] = "b" },
    ["tokenet.wire.v1.Status"] = { [2] = "s", [3] = "tokenet.wire.v1.StatusDetail", [4] = "tokenet.wire.v1.MetadataEntry" },
    ["tokenet.wire.v1.StatusDetail"] = { [1] = "s", [2] = "b" },
}
local method_types = {
    ["/tokenet.bench.v1.Bench/Echo"] = { request = "tokenet.bench.v1.EchoRequest", response = "tokenet.bench.v1.EchoResponse" },
    ["/tokenet.bench.v1.Bench/Stream"] = { request = "tokenet.bench.v1.StreamRequest", response = "tokenet.bench.v1.EchoResponse" },
    ["/tokenet.health.v1.Health/Check"] = { request = "tokenet.health.v1.HealthCheckRequest", response = "tokenet.health.v1.HealthCheckResponse" },
    ["/tokenet.health.v1.Health/Watch"] = { request = "tokenet.health.v1.HealthCheckRequest", response = "tokenet.health.v1.HealthCheckResponse" },
    ["/tokenet.issuer.v1.IssuerApp/CardView"] = { request = "tokenet.issuer.v1.CardViewRequest", response = "tokenet.issuer.v1.CardViewResponse" },
    ["/tokenet.issuer.v1.IssuerAppToApp/OpenApp"] = { request = "tokenet.issuer.v1.OpenAppRequest", response = "tokenet.issuer.v1.OpenAppResponse" },
    ["/tokenet.issuer.v1.IssuerAppToApp/Authorize"] = { request = "tokenet.issuer.v1.AuthorizeAppSessionRequest", response = "tokenet.issuer.v1.AuthorizeAppSessionResponse" },
    ["/tokenet.issuer.v1.IssuerEnrolment/Enroll"] = { request = "tokenet.issuer.v1.EnrollRequest", response = "tokenet.issuer.v1.EnrollResponse" },
    ["/tokenet.issuer.v1.IssuerEnrolment/UnlockCredentials"] = { request = "tokenet.issuer.v1.UnlockRequest", response = "tokenet.issuer.v1.UnlockResponse" },
    ["/tokenet.issuer.v1.IssuerAppAuth/Activate"] = { request = "tokenet.issuer.v1.AppActivateRequest", response = "tokenet.issuer.v1.AppActivateResponse" },
    ["/tokenet.issuer.v1.IssuerAppAuth/Accounts"] = { request = "tokenet.issuer.v1.AppAccountsRequest", response = "tokenet.issuer.v1.AppAccountsResponse" },
    ["/tokenet.issuer.v1.IssuerAppAuth/ActivateLinked"] = { request = "tokenet.issuer.v1.ActivateLinkedRequest", response = "tokenet.issuer.v1.ActivateLinkedResponse" },
    ["/tokenet.issuer.v1.IssuerAppAuth/Login"] = { request = "tokenet.issuer.v1.AppLoginRequest", response = "tokenet.issuer.v1.AppLoginResponse" },
    ["/tokenet.issuer.v1.IssuerAppAuth/DeleteAccount"] = { request = "tokenet.issuer.v1.AppDeleteAccountRequest", response = "tokenet.issuer.v1.AppDeleteAccountResponse" },
    ["/tokenet.issuer.v1.IssuerCardCare/ChangeTokenStates"] = { request = "tokenet.issuer.v1.IssuerChangeTokenStatesRequest", response = "tokenet.issuer.v1.IssuerChangeTokenStatesResponse" },
    ["/tokenet.issuer.v1.IssuerCardCare/RenewCard"] = { request = "tokenet.issuer.v1.IssuerRenewCardRequest", response = "tokenet.issuer.v1.IssuerRenewCardResponse" },
    ["/tokenet.issuer.v1.IssuerCardCare/SendMessage"] = { request = "tokenet.issuer.v1.IssuerSendMessageRequest", response = "tokenet.issuer.v1.IssuerSendMessageResponse" },
    ["/tokenet.issuer.v1.IssuerCardCare/SetCardStatus"] = { request = "tokenet.issuer.v1.IssuerSetCardStatusRequest", response = "tokenet.issuer.v1.IssuerSetCardStatusResponse" },
    ["/tokenet.issuer.v1.IssuerControl/ListCards"] = { request = "tokenet.issuer.v1.ListCardsRequest", response = "tokenet.issuer.v1.ListCardsResponse" },
    ["/tokenet.issuer.v1.IssuerControl/PushCard"] = { request = "tokenet.issuer.v1.PushCardRequest", response = "tokenet.issuer.v1.PushCardResponse" },
    ["/tokenet.issuer.v1.IssuerControl/SyncWithTsp"] = { request = "tokenet.issuer.v1.IssuerSyncWithTspRequest", response = "tokenet.issuer.v1.IssuerSyncWithTspResponse" },
    ["/tokenet.issuer.v1.IssuerDecisions/CheckCardEligibility"] = { request = "tokenet.issuer.v1.CardEligibilityRequest", response = "tokenet.issuer.v1.CardEligibilityResponse" },
    ["/tokenet.issuer.v1.IssuerDecisions/AuthorizeDigitization"] = { request = "tokenet.issuer.v1.AuthorizeDigitizationRequest", response = "tokenet.issuer.v1.AuthorizeDigitizationResponse" },
    ["/tokenet.issuer.v1.IssuerAppInbox/Notifications"] = { request = "tokenet.issuer.v1.AppNotificationsRequest", response = "tokenet.issuer.v1.AppNotificationsResponse" },
    ["/tokenet.issuer.v1.IssuerAppInbox/AnswerAuthn"] = { request = "tokenet.issuer.v1.AppAnswerAuthnRequest", response = "tokenet.issuer.v1.AppAnswerAuthnResponse" },
    ["/tokenet.issuer.v1.IssuerOtp/SendOtp"] = { request = "tokenet.issuer.v1.SendOtpRequest", response = "tokenet.issuer.v1.SendOtpResponse" },
    ["/tokenet.issuer.v1.IssuerCallCentre/Outbox"] = { request = "tokenet.issuer.v1.OutboxRequest", response = "tokenet.issuer.v1.OutboxResponse" },
    ["/tokenet.issuer.v1.IssuerCallCentre/ActivateToken"] = { request = "tokenet.issuer.v1.CallCentreActivateRequest", response = "tokenet.issuer.v1.CallCentreActivateResponse" },
    ["/tokenet.reflection.v1.Reflection/ListServices"] = { request = "tokenet.reflection.v1.ListServicesRequest", response = "tokenet.reflection.v1.ListServicesResponse" },
    ["/tokenet.reflection.v1.Reflection/DescribeSymbol"] = { request = "tokenet.reflection.v1.DescribeSymbolRequest", response = "tokenet.reflection.v1.DescribeSymbolResponse" },
    ["/tokenet.testing.v1.Echo/Unary"] = { request = "tokenet.testing.v1.Scalars", response = "tokenet.testing.v1.Scalars" },
    ["/tokenet.testing.v1.Echo/Restricted"] = { request = "tokenet.testing.v1.Scalars", response = "tokenet.testing.v1.Scalars" },
    ["/tokenet.testing.v1.Echo/ServerStream"] = { request = "tokenet.testing.v1.Scalars", response = "tokenet.testing.v1.Scalars" },
    ["/tokenet.testing.v1.Echo/ClientStream"] = { request = "tokenet.testing.v1.Scalars", response = "tokenet.testing.v1.Scalars" },
    ["/tokenet.testing.v1.Echo/Bidi"] = { request = "tokenet.testing.v1.Choice", response = "tokenet.testing.v1.Choice" },
    ["/tokenet.tsp.v1.Enrolment/RegisterEnrolment"] = { request = "tokenet.tsp.v1.RegisterEnrolmentRequest", response = "tokenet.tsp.v1.RegisterEnrolmentResponse" },
    ["/tokenet.tsp.v1.Enrolment/UnlockCredentials"] = { request = "tokenet.tsp.v1.UnlockCredentialsRequest", response = "tokenet.tsp.v1.UnlockCredentialsResponse" },
    ["/tokenet.tsp.v1.Authentication/VerifyActivation"] = { request = "tokenet.tsp.v1.VerifyActivationRequest", response = "tokenet.tsp.v1.VerifyActivationResponse" },
    ["/tokenet.tsp.v1.Authentication/VerifyActivations"] = { request = "tokenet.tsp.v1.VerifyActivationsRequest", response = "tokenet.tsp.v1.VerifyActivationsResponse" },
    ["/tokenet.tsp.v1.Authentication/Login"] = { request = "tokenet.tsp.v1.LoginRequest", response = "tokenet.tsp.v1.LoginResponse" },
    ["/tokenet.tsp.v1.Authentication/Resync"] = { request = "tokenet.tsp.v1.ResyncRequest", response = "tokenet.tsp.v1.ResyncResponse" },
    ["/tokenet.tsp.v1.Authentication/RemoveCredentials"] = { request = "tokenet.tsp.v1.RemoveCredentialsRequest", response = "tokenet.tsp.v1.RemoveCredentialsResponse" },
    ["/tokenet.tsp.v1.TspControl/ListTokens"] = { request = "tokenet.tsp.v1.ListTokensRequest", response = "tokenet.tsp.v1.ListTokensResponse" },
    ["/tokenet.tsp.v1.TspControl/TokenHistory"] = { request = "tokenet.tsp.v1.TokenHistoryRequest", response = "tokenet.tsp.v1.TokenHistoryResponse" },
    ["/tokenet.tsp.v1.TspControl/RotateEncryptionKey"] = { request = "tokenet.tsp.v1.RotateEncryptionKeyRequest", response = "tokenet.tsp.v1.RotateEncryptionKeyResponse" },
    ["/tokenet.tsp.v1.TspControl/ForgetEncryptionKey"] = { request = "tokenet.tsp.v1.ForgetEncryptionKeyRequest", response = "tokenet.tsp.v1.ForgetEncryptionKeyResponse" },
    ["/tokenet.tsp.v1.Idv/SelectIdvMethod"] = { request = "tokenet.tsp.v1.SelectIdvMethodRequest", response = "tokenet.tsp.v1.SelectIdvMethodResponse" },
    ["/tokenet.tsp.v1.Idv/SubmitOtp"] = { request = "tokenet.tsp.v1.SubmitOtpRequest", response = "tokenet.tsp.v1.SubmitOtpResponse" },
    ["/tokenet.tsp.v1.Idv/ResendOtp"] = { request = "tokenet.tsp.v1.ResendOtpRequest", response = "tokenet.tsp.v1.ResendOtpResponse" },
    ["/tokenet.tsp.v1.IssuerIdv/ActivateToken"] = { request = "tokenet.tsp.v1.ActivateTokenRequest", response = "tokenet.tsp.v1.ActivateTokenResponse" },
    ["/tokenet.tsp.v1.IssuerIdv/ActivateDigitalCard"] = { request = "tokenet.tsp.v1.ActivateDigitalCardRequest", response = "tokenet.tsp.v1.ActivateDigitalCardResponse" },
    ["/tokenet.tsp.v1.Issuers/RegisterIssuer"] = { request = "tokenet.tsp.v1.RegisterIssuerRequest", response = "tokenet.tsp.v1.RegisterIssuerResponse" },
    ["/tokenet.tsp.v1.Issuers/CreatePushReceipt"] = { request = "tokenet.tsp.v1.CreatePushReceiptRequest", response = "tokenet.tsp.v1.CreatePushReceiptResponse" },
    ["/tokenet.tsp.v1.TokenLifecycle/ChangeTokenState"] = { request = "tokenet.tsp.v1.ChangeTokenStateRequest", response = "tokenet.tsp.v1.ChangeTokenStateResponse" },
    ["/tokenet.tsp.v1.TokenLifecycle/ChangeIssuerTokenStates"] = { request = "tokenet.tsp.v1.ChangeIssuerTokenStatesRequest", response = "tokenet.tsp.v1.ChangeIssuerTokenStatesResponse" },
    ["/tokenet.tsp.v1.TokenLifecycle/ReplenishPaymentKeys"] = { request = "tokenet.tsp.v1.ReplenishPaymentKeysRequest", response = "tokenet.tsp.v1.ReplenishPaymentKeysResponse" },
    ["/tokenet.tsp.v1.TokenLifecycle/GetTokenStates"] = { request = "tokenet.tsp.v1.GetTokenStatesRequest", response = "tokenet.tsp.v1.GetTokenStatesResponse" },
    ["/tokenet.tsp.v1.TokenLifecycle/RequestReplenishment"] = { request = "tokenet.tsp.v1.RequestReplenishmentRequest", response = "tokenet.tsp.v1.RequestReplenishmentResponse" },
    ["/tokenet.tsp.v1.Transactions/SimulateTransaction"] = { request = "tokenet.tsp.v1.SimulateTransactionRequest", response = "tokenet.tsp.v1.SimulateTransactionResponse" },
    ["/tokenet.tsp.v1.Transactions/AnswerAuthn"] = { request = "tokenet.tsp.v1.AnswerAuthnRequest", response = "tokenet.tsp.v1.AnswerAuthnResponse" },
    ["/tokenet.tsp.v1.Transactions/ListTransactions"] = { request = "tokenet.tsp.v1.ListTransactionsRequest", response = "tokenet.tsp.v1.ListTransactionsResponse" },
    ["/tokenet.tsp.v1.IssuerCardUpdates/RenewCard"] = { request = "tokenet.tsp.v1.RenewCardRequest", response = "tokenet.tsp.v1.RenewCardResponse" },
    ["/tokenet.tsp.v1.IssuerCardUpdates/GetFundingCards"] = { request = "tokenet.tsp.v1.GetFundingCardsRequest", response = "tokenet.tsp.v1.GetFundingCardsResponse" },
    ["/tokenet.tsp.v1.IssuerCardUpdates/GetIssuerTokens"] = { request = "tokenet.tsp.v1.GetIssuerTokensRequest", response = "tokenet.tsp.v1.GetIssuerTokensResponse" },
    ["/tokenet.tsp.v1.IssuerCardUpdates/SendCardMessage"] = { request = "tokenet.tsp.v1.SendCardMessageRequest", response = "tokenet.tsp.v1.SendCardMessageResponse" },
    ["/tokenet.tsp.v1.Notifications/Subscribe"] = { request = "tokenet.tsp.v1.SubscribeRequest", response = "tokenet.tsp.v1.Notification" },
    ["/tokenet.tsp.v1.Notifications/Acknowledge"] = { request = "tokenet.tsp.v1.AcknowledgeRequest", response = "tokenet.tsp.v1.AcknowledgeResponse" },
    ["/tokenet.tsp.v1.Notifications/Publish"] = { request = "tokenet.tsp.v1.PublishRequest", response = "tokenet.tsp.v1.PublishResponse" },
    ["/tokenet.tsp.v1.Notifications/QueueStatus"] = { request = "tokenet.tsp.v1.QueueStatusRequest", response = "tokenet.tsp.v1.QueueStatusResponse" },
    ["/tokenet.tsp.v1.Provisioning/GetEncryptionKeys"] = { request = "tokenet.tsp.v1.GetEncryptionKeysRequest", response = "tokenet.tsp.v1.GetEncryptionKeysResponse" },
    ["/tokenet.tsp.v1.Provisioning/CheckEligibility"] = { request = "tokenet.tsp.v1.CheckEligibilityRequest", response = "tokenet.tsp.v1.CheckEligibilityResponse" },
    ["/tokenet.tsp.v1.Provisioning/Digitize"] = { request = "tokenet.tsp.v1.DigitizeRequest", response = "tokenet.tsp.v1.DigitizeResponse" },
    ["/tokenet.tsp.v1.Provisioning/CreatePushSession"] = { request = "tokenet.tsp.v1.CreatePushSessionRequest", response = "tokenet.tsp.v1.CreatePushSessionResponse" },
    ["/tokenet.tsp.v1.Provisioning/GetTokenIssuer"] = { request = "tokenet.tsp.v1.GetTokenIssuerRequest", response = "tokenet.tsp.v1.GetTokenIssuerResponse" },
    ["/tokenet.wallet.v1.WalletAppToApp/OpenIssuerApp"] = { request = "tokenet.wallet.v1.OpenIssuerAppRequest", response = "tokenet.wallet.v1.OpenIssuerAppResponse" },
    ["/tokenet.wallet.v1.WalletAppToApp/BankingAppActivationResponse"] = { request = "tokenet.wallet.v1.BankingAppActivationRequest", response = "tokenet.wallet.v1.BankingAppActivationAck" },
    ["/tokenet.wallet.v1.WalletControl/AddCard"] = { request = "tokenet.wallet.v1.AddCardRequest", response = "tokenet.wallet.v1.AddCardResponse" },
    ["/tokenet.wallet.v1.WalletControl/AcceptTerms"] = { request = "tokenet.wallet.v1.AcceptTermsRequest", response = "tokenet.wallet.v1.AcceptTermsResponse" },
    ["/tokenet.wallet.v1.WalletControl/ListCards"] = { request = "tokenet.wallet.v1.ListWalletCardsRequest", response = "tokenet.wallet.v1.ListWalletCardsResponse" },
    ["/tokenet.wallet.v1.WalletControl/SyncWithTsp"] = { request = "tokenet.wallet.v1.SyncWithTspRequest", response = "tokenet.wallet.v1.SyncWithTspResponse" },
    ["/tokenet.wallet.v1.WalletIdv/SelectIdvMethod"] = { request = "tokenet.wallet.v1.WalletSelectIdvMethodRequest", response = "tokenet.wallet.v1.WalletSelectIdvMethodResponse" },
    ["/tokenet.wallet.v1.WalletIdv/SubmitOtp"] = { request = "tokenet.wallet.v1.WalletSubmitOtpRequest", response = "tokenet.wallet.v1.WalletSubmitOtpResponse" },
    ["/tokenet.wallet.v1.WalletIdv/ResendOtp"] = { request = "tokenet.wallet.v1.WalletResendOtpRequest", response = "tokenet.wallet.v1.WalletResendOtpResponse" },
    ["/tokenet.wallet.v1.WalletLifecycle/ChangeCardState"] = { request = "tokenet.wallet.v1.WalletChangeCardStateRequest", response = "tokenet.wallet.v1.WalletChangeCardStateResponse" },
    ["/tokenet.wallet.v1.WalletLifecycle/ListTransactions"] = { request = "tokenet.wallet.v1.WalletTransactionsRequest", response = "tokenet.wallet.v1.WalletTransactionsResponse" },
    ["/tokenet.wallet.v1.WalletLifecycle/Inbox"] = { request = "tokenet.wallet.v1.WalletInboxRequest", response = "tokenet.wallet.v1.WalletInboxResponse" },
    ["/tokenet.wallet.v1.WalletLifecycle/PaymentKeys"] = { request = "tokenet.wallet.v1.PaymentKeysRequest", response = "tokenet.wallet.v1.PaymentKeysResponse" },
    ["/tokenet.wallet.v1.WalletLifecycle/UsePaymentKey"] = { request = "tokenet.wallet.v1.PaymentKeysRequest", response = "tokenet.wallet.v1.PaymentKeysResponse" },
    ["/tokenet.wallet.v1.WalletEvents/Listen"] = { request = "tokenet.wallet.v1.ListenRequest", response = "tokenet.wallet.v1.WalletEvent" },
    ["/tokenet.wallet.v1.WalletEvents/CurrentTokens"] = { request = "tokenet.wallet.v1.CurrentTokensRequest", response = "tokenet.wallet.v1.CurrentTokensResponse" },
    ["/tokenet.wallet.v1.WalletSelection/SetActiveWalletAccount"] = { request = "tokenet.wallet.v1.SetActiveWalletAccountRequest", response = "tokenet.wallet.v1.SelectionResponse" },
    ["/tokenet.wallet.v1.WalletSelection/SelectCard"] = { request = "tokenet.wallet.v1.SelectCardRequest", response = "tokenet.wallet.v1.SelectionResponse" },
    ["/tokenet.wallet.v1.WalletPush/PushCardData"] = { request = "tokenet.wallet.v1.PushCardDataRequest", response = "tokenet.wallet.v1.PushCardDataResponse" },
}
-- END generated by Tools/gen-protos

-- Whether a number, as the protobuf dissector may show it, reads as a card number by the rule above: a UInt64's
-- decimal text read unsigned, as a signed 64-bit value (an int64 field) and zigzag-decoded (a sint64 field). An
-- amount or an unknown field holding a card number showed it whole in the tree, where `tokenet decode` masks it.
-- Only readings of 13 to 19 digits, a card number's lengths, are looked at: the unsigned reading of any negative
-- int64 (-1 is 18446744073709551615) would otherwise mask every negative number. A value with its top bit set is
-- read as a negative int64 alone: zigzag-decoded it is beyond 2^62, no number a sint64 field carries for a card.
-- Numbers inside packed repeated fields, and inside the nested messages of a type this build lacks, are not looked at
-- (no Tokenet message has packed numbers).
local function number_holds_card(value)
    local forms
    if value:rshift(63) == UInt64(1) then
        forms = { tostring(Int64.fromhex(value:tohex())) }
    else
        local half = value:rshift(1)
        local zigzag = (value:band(UInt64(1)) == UInt64(0)) and tostring(half) or ("-" .. tostring(half + 1))
        forms = { tostring(value), zigzag }
    end
    for _, form in ipairs(forms) do
        local digits = #form - (form:sub(1, 1) == "-" and 1 or 0)
        if digits >= 13 and digits <= 19 and masked_text(form) ~= form then return true end
    end
    return false
end

-- The bytes of a varint (at least 6 bytes long: a shorter one stays below 2^35, too few digits for a card number)
-- whose value holds a card number, as positions that write zero in the same length (a padded varint, which protobuf
-- readers take), so that every field stays where it was.
local function masked_varint(range, offset, length, positions)
    if length < 6 then return end
    local value = varint_uint64(range(offset, length))
    if not number_holds_card(value) then return end
    local at = range:offset() + offset
    for k = 0, length - 2 do positions[#positions + 1] = { at + k, 0x80 } end
    positions[#positions + 1] = { at + length - 1, 0x00 }
end

-- Eight bytes of a fixed64, sfixed64 or double whose value holds a card number, as positions that write zeros: read
-- as a double when the schema says the field is one (`kind` "d"), as an integer when it says it is not, and both
-- ways for a field it does not have. Read as a double, only a whole number of 13 to 19 digits can be a card number:
-- the digits of 0.1 written to 17 places (0.10000000000000001) read as one by the text rule, and so do the bits of
-- any double read as an integer.
local function masked_fixed64(range, kind, positions)
    local holds = false
    if kind ~= "d" then holds = number_holds_card(range:le_uint64()) end
    if not holds and (kind == "d" or kind == nil) then
        local double = range:le_float()
        if double == math.floor(double) and double >= 1e12 and double < 1e19 then
            local text = string.format("%.0f", double)
            holds = masked_text(text) ~= text
        end
    end
    if not holds then return end
    for k = 0, 7 do positions[#positions + 1] = { range:offset() + k, 0 } end
end

-- Whether `range` reads whole as protobuf fields, one of them length-delimited and not empty: a message, not text.
-- Text that a person or a program wrote almost never does (a length below 32 is a control character).
local function reads_as_message(range)
    if range == nil then return false end
    local fields = read_fields(range)
    if fields == nil then return false end
    for _, field in ipairs(fields) do
        if field.wire_type == 2 and field.size > 0 then return true end
    end
    return false
end

-- Adds to `positions` the { offset from `base`, new byte, count } runs of the bytes to mask in `range`, a message of
-- type `message_type` (a run per field masked whole: a pair per byte took 200 bytes of memory for each byte of a
-- large message):
-- card numbers in its text fields by the rule above, and its secret fields whole. A text field whose bytes read as a
-- message, and a length-delimited field the type does not have, are masked whole: they are another type's fields (a
-- message read as the wrong type, a newer peer's field), whose secrets cannot be told by name. Returns false when
-- the message, or one inside it, does not parse as its known type says (or nests deeper than 32): its secret fields
-- cannot be found, though the protobuf dissector may still show some of them, so the caller withholds it whole.
local function message_positions(range, base, message_type, positions, depth)
    -- A secret field (`secret`), or one whose contents are another type's fields, which the tree says apart.
    local function whole(field, secret)
        positions[#positions + 1] = { field.range:offset() - base, 42, field.size }
        if secret then positions.card = true else positions.fields = true end
    end
    local function as_text(text_range)
        local offset, bytes = text_range:offset() - base, text_range:bytes()
        for _, change in ipairs(card_number_digits(function(i) return bytes:get_index(i) end, bytes:len())) do
            positions[#positions + 1] = { offset + change[1], change[2], 1 }
            positions.card = true
        end
    end
    -- Numbers are masked where they are, in positions relative to the capture's bytes: moved to `base` here.
    local function as_numbers(numbers)
        for _, change in ipairs(numbers) do positions[#positions + 1] = { change[1] - base, change[2], 1 } end
        -- Noted beside the positions, for the tree's word that a masked number reads 0.
        if #numbers > 0 then positions.numbers, positions.card = true, true end
    end
    local kinds = message_fields[message_type]
    local fields = read_fields(range)
    if kinds ~= nil and (fields == nil or depth > 32) then return false end
    if kinds == nil then
        as_text(range)
        -- Bytes of no known type still have their numbers masked where they read as fields.
        if fields == nil or depth > 32 then return true end
        kinds = {}
    end
    for _, field in ipairs(fields) do
        local kind = kinds[field.number]
        if field.wire_type == 2 and field.range and kind then
            if kind == "x" then
                whole(field, true)
            elseif (kind == "s" or kind == "b") and reads_as_message(field.range) then
                whole(field, false)
            elseif kind == "s" or kind == "b" or kind == "d" then
                as_text(field.range)
            elseif not message_positions(field.range, base, kind, positions, depth + 1) then
                return false
            end
        elseif field.wire_type == 2 and field.range then
            -- Not in the schema (a newer peer's field, or a message read as the wrong type): what it holds cannot be
            -- told, a security code as well as anything, so none of it shows.
            whole(field, false)
        elseif field.wire_type == 0 then
            local numbers = {}
            masked_varint(field.value_range, 0, field.value_range:len(), numbers)
            as_numbers(numbers)
        elseif field.wire_type == 1 then
            local numbers = {}
            masked_fixed64(field.whole(field.whole:len() - 8, 8), kind, numbers)
            as_numbers(numbers)
        end
    end
    return true
end

-- A message's bytes with any card number in them masked, and the value of every secret field of its type (a
-- message type name, when known) replaced by asterisks: the same length, so every field stays where it was. For the
-- protobuf dissector and the tree's hex view: a new data source named so when something was masked. A message of
-- unknown type is looked at as text throughout. Also returns what was masked, in words for the tree (nil when
-- nothing was): card data (a card number or a secret field), and fields of another type, which are told apart since
-- the latter are masked by a guess, not for what they are known to hold.
-- Nil for a message of a known type that does not parse as it: its bytes are to be withheld.
local function masked_tvb(range, message_type)
    local positions = {}
    if not message_positions(range, range:offset(), message_type or "", positions, 0) then return nil end
    if #positions == 0 then return range:tvb(), nil end
    local bytes = range:bytes()
    for _, change in ipairs(positions) do
        for k = change[1], change[1] + change[3] - 1 do bytes:set_index(k, change[2]) end
    end
    local words = {}
    if positions.card then words[#words + 1] = "card data masked" end
    if positions.numbers then words[#words + 1] = "a masked number reads 0" end
    if positions.fields then words[#words + 1] = "fields of another type masked" end
    return bytes:tvb("Message (masked)"), table.concat(words, "; ")
end

-- Characters beyond ASCII that text from a peer shows escaped, as the CLI shows them
-- (Sources/TokenetWire/Text/UnicodeScalar+Invisible.swift): C1 controls, the line and paragraph separators, and
-- Unicode's format characters (bidirectional overrides, zero-width characters, the byte order mark…).
local invisible_ranges = {
    { 0x0080, 0x009F }, { 0x00AD, 0x00AD }, { 0x0600, 0x0605 }, { 0x061C, 0x061C }, { 0x06DD, 0x06DD },
    { 0x070F, 0x070F }, { 0x0890, 0x0891 }, { 0x08E2, 0x08E2 }, { 0x180E, 0x180E }, { 0x200B, 0x200F },
    { 0x2028, 0x202E }, { 0x2060, 0x2064 }, { 0x2066, 0x206F }, { 0xFEFF, 0xFEFF }, { 0xFFF9, 0xFFFB },
    { 0x110BD, 0x110BD }, { 0x110CD, 0x110CD }, { 0x13430, 0x1343F }, { 0x1BCA0, 0x1BCA3 }, { 0x1D173, 0x1D17A },
    { 0xE0001, 0xE0001 }, { 0xE0020, 0xE007F },
}

local function is_invisible(cp)
    for _, range in ipairs(invisible_ranges) do
        if cp >= range[1] and cp <= range[2] then return true end
    end
    return false
end

-- Text from a peer as the summary and the tree's fields show it: control and invisible characters escaped, so that
-- a status message cannot clear a terminal, colour it, reorder the line (a right-to-left override) or start a line
-- that looks like another frame's. The fields hold the escaped text too, so that every output (the tree, PDML that
-- tokenet-diagram reads, -T fields) shows one form: Wireshark's own escaping left C1 and format characters as they
-- were there, and wrote a BEL as "\x7".
local function escaped(value)
    local ascii = value:gsub("%c", function(c)
        local names = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
        return names[c] or string.format("\\x%02x", c:byte())
    end)
    if not ascii:find("[\128-\255]") then return ascii end
    local points, starts, lengths = decode_utf8(function(i) return ascii:byte(i + 1) end, #ascii)
    local parts = {}
    for k, cp in ipairs(points) do
        if cp >= 0 and is_invisible(cp) then
            parts[#parts + 1] = string.format("\\u{%X}", cp)
        else
            parts[#parts + 1] = ascii:sub(starts[k] + 1, starts[k] + lengths[k])
        end
    end
    return table.concat(parts)
end

local function text(field)
    if field.range == nil then return "" end
    return masked_text(field.range:string(ENC_UTF_8))
end

-- The bytes a text field's item points at: the wire's, unless they hold a card number, which exports that write
-- each field's bytes (PDML's value=, Wireshark's "Export as XML") would carry in hex beside the masked text: then
-- those of a masked copy, as a message's bytes are. Nil stays nil.
local function shown_range(range)
    if range == nil then return nil end
    local raw = range:string(ENC_UTF_8)
    local masked = masked_text(raw)
    if masked == raw then return range end
    return ByteArray.new(masked, true):tvb("Text (card numbers masked)"):range()
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
    -- The kind's own fields must read too: a message whose data length is cut off showed as "message (0 bytes)",
    -- with no mark, where tokenet decode and the nodes refuse the frame.
    if frame.body ~= nil then
        local body_fields, body_reason = read_fields(frame.body)
        if body_fields == nil then return nil, frame.kind .. ": " .. body_reason end
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
    local key, value, value_range = "", nil, nil
    -- On the field's tag byte, as the kind: its whole bytes hold the value, which may hold a card number.
    local subtree = tree:add(tokenet, field.whole:range(0, 1), "Metadata")
    for _, entry in ipairs(entries) do
        if entry.number == 1 and entry.wire_type == 2 then
            key = text(entry)
            subtree:add(f.metadata_key, shown_range(entry.range) or entry.whole, escaped(key))
        elseif entry.number == 2 and entry.wire_type == 2 then
            value, value_range = text(entry), shown_range(entry.range) or entry.whole
            subtree:add(f.metadata_text, value_range, escaped(value))
        elseif entry.number == 3 and entry.wire_type == 2 then
            value = "(" .. entry.size .. " bytes withheld)"
            -- On the entry's tag byte alone, as a withheld message's item is; `tokenet decode` shows "***".
            subtree:add(f.metadata_binary_withheld, entry.whole:range(0, 1), entry.size)
        end
    end
    subtree:set_text(escaped("Metadata: " .. key .. ": " .. (value or "")))
    if key == "tokenet-trace-id" and value then tree:add(f.trace_id, value_range or field.whole, escaped(value)) end
    return key, value
end

local payload_packet, payloads_in_packet = nil, 0

local function dissect_payload(data_range, pinfo, tree, message_type_info, message_type)
    if data_range == nil or protobuf == nil then return end
    if payload_packet ~= pinfo.number then payload_packet, payloads_in_packet = pinfo.number, 0 end
    payloads_in_packet = payloads_in_packet + 1
    if payloads_in_packet > max_payloads_per_packet then
        tree:add_proto_expert_info(ef_payloads_skipped)
        return
    end
    local shown = masked_tvb(data_range, message_type)
    if shown == nil then return end
    local previous = pinfo.private["pb_msg_type"]
    pinfo.private["pb_msg_type"] = message_type_info
    pcall(Dissector.call, protobuf, shown, pinfo, tree)
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
    -- Its tag byte: the kind's field spans the whole body, whose bytes an export would write out with the item.
    tree:add(f.kind, frame.body_field and frame.body_field.whole:range(0, 1) or range(0, 0), kind)

    local call = calls[frame.stream_id]
    if kind ~= "call_start" and frame.stream_id ~= 0 then
        if call then
            tree:add(f.method, range(0, 0), escaped(call.method)):set_generated()
            tree:add(f.call_frame, range(0, 0), call.started):set_generated()
            -- Only the call_start carries the trace id: shown on every frame of the call, a filter on it finds the
            -- flow's messages, statuses and cancels too, not only the starts of its calls.
            if call.trace then tree:add(f.trace_id, range(0, 0), escaped(call.trace)):set_generated() end
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
                tree:add(f.agent, shown_range(field.range) or field.whole, escaped(text(field)))
                summary = summary .. " " .. text(field)
            end
        end
    elseif kind == "call_start" then
        local method, trace = "", nil
        for _, field in ipairs(body_fields) do
            if field.number == 1 then
                method = text(field)
                tree:add(f.method, shown_range(field.range) or field.whole, escaped(method))
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
        -- The direction only when the call is known: with none, "7 message  (32 bytes)" had two spaces.
        summary = summary .. (call and (" " .. direction) or "") .. " (" .. size .. " bytes)"
        local types = call and method_types[call.method]
        local message_type = types and types[direction]
        local shown, masked
        if data and data.range and message_type then shown, masked = masked_tvb(data.range, message_type) end
        if data and data.range and message_type == nil then
            -- A message whose type is not known (its call_start is not in the capture, or its method is not in
            -- Protos/): which of its fields is a security code, a PIN or an access token cannot be told, so its
            -- bytes are withheld, not masked by guesswork; the item points at the field's tag byte alone.
            local why = call and ("this build's Protos/ have no method " .. escaped(masked_text(call.method)))
                or "its call_start is not in the capture"
            local item = tree:add(f.data_withheld, data.whole:range(0, 1), size)
            item:set_text("Message data: " .. size .. " bytes withheld (type not known: " .. why .. ")")
        elseif data and data.range and shown == nil then
            -- Of a known type, but its bytes (or a message inside them) do not parse as it: where its secret fields
            -- are cannot be told, and the protobuf dissector would still show the fields it read before the fault.
            local item = tree:add(f.data_withheld, data.whole:range(0, 1), size)
            item:set_text("Message data: " .. size .. " bytes withheld (they do not parse as " .. message_type .. ")")
        elseif data and data.range then
            -- The bytes as the tree shows them in hex are masked too: a card number's digits are as readable there.
            local item = tree:add(f.data, shown:range())
            -- The tree's fields show the masked copy: a number that held a card number reads 0 there.
            if masked then item:append_text(" (" .. masked .. ")") end
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
                message, message_range = text(field), shown_range(field.range) or field.whole
            end
        end
        local code_text = "0"
        if code_field then
            code_text = add_varint32(tree, f.status_code, code_field)
        else
            tree:add(f.status_code, frame.body_field.whole:range(0, 1), UInt64(0))
        end
        if message_range then tree:add(f.status_message, message_range, escaped(message)) end
        for _, field in ipairs(body_fields) do
            if field.number == 3 and field.range then
                local detail_type, detail_value, type_range = "", nil, nil
                for _, part in ipairs(read_fields(field.range) or {}) do
                    if part.number == 1 then detail_type, type_range = text(part), shown_range(part.range) end
                    if part.number == 2 then detail_value = part.range end
                end
                -- On the type's own bytes: the detail's whole field holds its value's bytes too, unmasked.
                local detail = tree:add(f.detail_type, type_range or field.whole:range(0, 1), escaped(detail_type))
                local shown = detail_value and message_fields[detail_type] and masked_tvb(detail_value, detail_type)
                if shown then
                    detail:add(f.detail_value, shown:range())
                    dissect_payload(detail_value, pinfo, detail, "message," .. detail_type, detail_type)
                elseif detail_value then
                    -- A value of a type Protos/ do not have, or that does not parse as its type: where its secrets
                    -- are cannot be told, as for a message, so only its length shows.
                    local why = message_fields[detail_type] and ("they do not parse as " .. detail_type)
                        or "type not known"
                    local item = detail:add(f.detail_withheld, field.whole:range(0, 1), detail_value:len())
                    item:set_text("Detail value: " .. detail_value:len() .. " bytes withheld (" .. escaped(why) .. ")")
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
                tree:add(f.cancel_reason, shown_range(field.range) or field.whole, escaped(text(field)))
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
                tree:add(f.goaway_reason, shown_range(field.range) or field.whole, escaped(reason))
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

-- What this dissector last wrote to the Info column, and for which packet: to tell a further TLS record of the same
-- dissection (append) from a new dissection of the packet (set). The records of one packet are dissected one after
-- the other, so the last packet's is all it needs.
local written_packet, written_info = nil, nil

-- A packet may carry several TLS records, each dissected on its own: the first sets the columns, the others append
-- to them. The protocol column does not tell which comes first (TLS names itself again for each record), and the TLS
-- dissector fences the Info column after what it wrote: text set over the fence ran on from it with no separator
-- ("[TLS segment of a reassembled PDU]3 message request…3 half_close").
local function show_in_columns(pinfo, info)
    if written_packet == pinfo.number and tostring(pinfo.cols.info):find(written_info, 1, true) ~= nil then
        info = written_info .. ", " .. info
    end
    pinfo.cols.protocol:clear_fence()
    pinfo.cols.protocol = "Tokenet"
    pinfo.cols.info:clear_fence()
    pinfo.cols.info = info
    written_packet, written_info = pinfo.number, info
end

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
            local item = tree:add(tokenet, tvb(offset, 4), "Tokenet: frame length " .. length .. " above the limit")
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
        -- On the length prefix, not the whole frame: exports that write each item's bytes (JSON with -x, jsonraw)
        -- wrote the frame's, card numbers and security codes with them. The fields below point at their own bytes
        -- or at masked copies.
        local subtree = tree:add(tokenet, tvb(offset, 4))
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
        show_in_columns(pinfo, table.concat(summaries, ", "))
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
