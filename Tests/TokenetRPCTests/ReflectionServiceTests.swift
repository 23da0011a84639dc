import Foundation
import Testing
import TokenetWire

@testable import TokenetRPC

/// The reflection service over the in-memory transport: what it lists, how it describes each kind of symbol, and
/// that it admits only what the router serves.
@Suite struct ReflectionServiceTests {
    typealias Echo = TestingV1.Echo
    typealias Reflection = ReflectionV1.Reflection

    /// Serves two of Echo's four methods, health, and reflection, the way a node's listener assembles them.
    static func connect() -> RPCClient {
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in request }
        router.bidirectional(Echo.bidi) { requests, writer, _ in
            for try await request in requests { try await writer.send(request) }
        }
        HealthService(services: router.serviceNames).register(on: &router)
        ReflectionService(router: router).register(on: &router)
        return InMemoryCallTests.connect(router).1
    }

    func describe(_ symbol: String) async throws -> ReflectionV1.DescribeSymbolResponse {
        try await Self.connect().unary(Reflection.describeSymbol, ReflectionV1.DescribeSymbolRequest(symbol: symbol))
    }

    @Test func listsTheServedServicesSorted() async throws {
        let response = try await Self.connect().unary(Reflection.listServices, ReflectionV1.ListServicesRequest())
        #expect(
            response.services == [
                "tokenet.health.v1.Health", "tokenet.reflection.v1.Reflection", "tokenet.testing.v1.Echo",
            ])
    }

    @Test func describesAServiceWithOnlyItsRoutedMethods() async throws {
        let response = try await describe("tokenet.testing.v1.Echo")
        #expect(response.kind == .service)
        #expect(response.name == "tokenet.testing.v1.Echo")
        let methods = try #require(response.service?.methods)
        #expect(
            methods == [
                ReflectionV1.MethodDescription(
                    name: "Unary", path: "/tokenet.testing.v1.Echo/Unary", requestType: "tokenet.testing.v1.Scalars",
                    responseType: "tokenet.testing.v1.Scalars", clientStreaming: false, serverStreaming: false),
                ReflectionV1.MethodDescription(
                    name: "Bidi", path: "/tokenet.testing.v1.Echo/Bidi", requestType: "tokenet.testing.v1.Choice",
                    responseType: "tokenet.testing.v1.Choice", clientStreaming: true, serverStreaming: true,
                    comment: "Sends each request back as it comes."),
            ])
        #expect(response.service?.comment == "Answers each call with what it was sent, in every call shape.")
        // Every message and enum a client needs to write the requests, each once.
        #expect(
            response.messages.map(\.name) == [
                "tokenet.testing.v1.Scalars", "tokenet.testing.v1.Choice", "tokenet.testing.v1.Choice.Nested",
                "tokenet.testing.v1.Choice.Nested.Inner",
            ])
        #expect(response.enums.map(\.name) == ["tokenet.testing.v1.Color", "tokenet.testing.v1.Choice.Level"])
    }

    @Test(arguments: ["tokenet.testing.v1.Echo.Bidi", "/tokenet.testing.v1.Echo/Bidi", "tokenet.testing.v1.Echo/Bidi"])
    func describesAMethodInEverySpelling(symbol: String) async throws {
        let response = try await describe(symbol)
        #expect(response.kind == .method)
        #expect(response.name == "tokenet.testing.v1.Echo.Bidi")
        #expect(response.service?.name == "tokenet.testing.v1.Echo")
        #expect(response.service?.methods.map(\.path) == ["/tokenet.testing.v1.Echo/Bidi"])
        #expect(response.messages.first?.name == "tokenet.testing.v1.Choice")
    }

    @Test func describesAMessageWithItsOneofsEnumsAndNestedMessages() async throws {
        let response = try await describe("tokenet.testing.v1.Choice")
        #expect(response.kind == .message)
        let choice = try #require(response.messages.first)
        #expect(choice.name == "tokenet.testing.v1.Choice")
        let fields = Dictionary(uniqueKeysWithValues: choice.fields.map { ($0.name, $0) })
        #expect(choice.fields.map(\.number) == [1, 2, 3, 4, 5, 6, 7, 8])
        // The six members of `pick` share one oneof; the fields after it are outside any oneof.
        #expect(choice.fields.prefix(6).allSatisfy { $0.oneofIndex == 0 && $0.label == .optional })
        #expect(fields["direct_inner"]?.oneofIndex == nil)
        #expect(
            fields["direct_inner"]
                == ReflectionV1.FieldDescription(
                    name: "direct_inner", jsonName: "directInner", number: 7,
                    type: "tokenet.testing.v1.Choice.Nested.Inner", typeKind: .message, label: .optional))
        let level = try #require(fields["level"])
        #expect(level.type == "tokenet.testing.v1.Choice.Level")
        #expect(level.typeKind == .enum)
        #expect(level.label == .singular)
        #expect(level.enumValues.map(\.name) == ["LEVEL_UNSPECIFIED", "LEVEL_LOW", "LEVEL_HIGH"])
        #expect(
            fields["color"]?.enumValues.last
                == ReflectionV1.EnumValueDescription(
                    name: "COLOR_BLUE", number: -3, comment: "Negative: enum values are int32."))
        // The .proto comments, as written: several lines, quotes and backslashes kept.
        #expect(
            choice.comment
                == "One value of several kinds, with nested types.\n\nIts comments are read back through reflection.")
        #expect(fields["text"]?.comment == #"Free text, such as "a \ b" or \(x): written as it is."#)
        #expect(fields["number"]?.comment == "", "a field without a comment")
        #expect(fields["number"]?.oneofName == "pick", "oneof names come from the generated code")
        #expect(
            response.messages.map(\.name) == [
                "tokenet.testing.v1.Choice", "tokenet.testing.v1.Scalars", "tokenet.testing.v1.Choice.Nested",
                "tokenet.testing.v1.Choice.Nested.Inner",
            ])
        #expect(Set(response.enums.map(\.name)) == ["tokenet.testing.v1.Color", "tokenet.testing.v1.Choice.Level"])
    }

    @Test func describesScalarFieldsWithTheirJSONNames() async throws {
        let scalars = try #require(try await describe("tokenet.testing.v1.Scalars").messages.first)
        let uint32 = try #require(scalars.fields.first { $0.number == 5 })
        #expect(
            uint32
                == ReflectionV1.FieldDescription(
                    name: "f_uint32", jsonName: "fUint32", number: 5, type: "uint32", typeKind: .scalar,
                    label: .singular))
        #expect(scalars.fields.map(\.type).prefix(3) == ["double", "float", "int32"])
        #expect(scalars.fields.first { $0.number == 15 }?.type == "bytes")
    }

    @Test func describesAnEnum() async throws {
        let response = try await describe("tokenet.testing.v1.Color")
        #expect(response.kind == .enum)
        #expect(
            response.enums == [
                ReflectionV1.EnumDescription(
                    name: "tokenet.testing.v1.Color",
                    // In declaration order, from the generated enum.
                    values: [
                        .init(name: "COLOR_UNSPECIFIED", number: 0), .init(name: "COLOR_RED", number: 1),
                        .init(name: "COLOR_GREEN", number: 2),
                        .init(name: "COLOR_BLUE", number: -3, comment: "Negative: enum values are int32."),
                    ], comment: "A color, for enum fields of every kind.")
            ])
        #expect(response.messages.isEmpty)
    }

    /// Unknown names, methods the router does not route, and messages no served method uses are all unknown.
    @Test(arguments: [
        "tokenet.nothing.v1.Nothing", "tokenet.testing.v1.Echo.ClientStream", "tokenet.testing.v1.Echo/Nope",
        "tokenet.wire.v1.Frame", "tokenet.testing.v1.Presence", "Echo",
    ])
    func unknownSymbolIsNotFound(symbol: String) async throws {
        let error = try await #require(throws: RPCError.self) { try await describe(symbol) }
        #expect(error.code == .notFound)
        #expect(error.message.contains("'\(symbol)'"))
    }

    /// A symbol of a megabyte is cut short in the status; `tokenet describe` used to print all of it back.
    @Test func unknownLongSymbolIsCutShort() async throws {
        let symbol = String(repeating: "a", count: 1_000_000)
        let error = try await #require(throws: RPCError.self) { try await describe(symbol) }
        #expect(error.code == .notFound)
        #expect(error.message.hasSuffix("'\(String(repeating: "a", count: 256))... (1000000 bytes)'"))
    }

    @Test func emptySymbolIsInvalid() async throws {
        let error = try await #require(throws: RPCError.self) { try await describe("") }
        #expect(error.code == .invalidArgument)
    }

    /// A field alone in its oneof is how a field gets presence: it describes as optional, outside any oneof.
    @Test func presenceOneofDescribesAsOptionalField() throws {
        let fields = TestingV1.Presence.protoFields.map {
            ReflectionService.describeField($0, of: TestingV1.Presence.protoName)
        }
        #expect(fields.map(\.label) == [.optional, .optional, .optional, .optional])
        #expect(fields.allSatisfy { $0.oneofIndex == nil })
        #expect(fields.map(\.typeKind) == [.scalar, .scalar, .enum, .message])
        // The comment above `oneof _maybe_int` is the field's: it describes as a field, not as a oneof.
        #expect(
            fields.map(\.comment) == [
                "Written above the oneof that gives the field presence: the field's own comment.", "", "", "",
            ])
    }
}
