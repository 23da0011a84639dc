// swift-tools-version:6.0
// Tokenet: a sandbox of the card-tokenization ecosystem (wallet, issuer, token service provider).
import PackageDescription

/// What every party module builds on.
let partyDependencies: [Target.Dependency] = [
    "TokenetNode", "TokenetRPC", "TokenetWire", "TokenetTransport", "TokenetStorage", "TokenetCard",
]

let package = Package(
    name: "Tokenet",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tsp-node", targets: ["tsp-node"]),
        .executable(name: "issuer-node", targets: ["issuer-node"]),
        .executable(name: "wallet-node", targets: ["wallet-node"]),
        .executable(name: "tokenet", targets: ["tokenet"]),
    ],
    targets: [
        // MARK: C libraries from Debian, wrapped as module maps.
        .systemLibrary(
            name: "CProtobufC",
            path: "Sources/CProtobufC",
            pkgConfig: "libprotobuf-c",
            providers: [.apt(["libprotobuf-c-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        /// Linux headers and C macros Swift cannot import (epoll, eventfd, OpenSSL macros).
        .target(name: "CTokenetShims", dependencies: ["COpenSSL"]),
        /// protobuf-c code generated from Protos/ by Tools/gen-protos. Do not edit.
        .target(
            name: "CTokenetProtos",
            dependencies: ["CProtobufC"],
            cSettings: [.headerSearchPath("include")]
        ),

        // MARK: Wire format: generated messages, their protobuf-c bridge, JSON, and the frame codec.
        .target(
            name: "TokenetWire",
            dependencies: ["CTokenetProtos", "CProtobufC"],
            exclude: ["Generated/README.md"]
        ),

        // MARK: Key files: the permissions a file holding a secret may have.
        .target(name: "TokenetFileModes"),

        // MARK: Transport: event loop, sockets, TLS.
        .target(name: "TokenetTransport", dependencies: ["CTokenetShims", "COpenSSL", "TokenetFileModes"]),

        // MARK: RPC runtime: connection and call state machines, clients, servers.
        .target(name: "TokenetRPC", dependencies: ["TokenetWire", "TokenetTransport"]),

        // MARK: Storage: SQLite with WAL, foreign keys, migrations and transactions.
        .target(name: "TokenetStorage", dependencies: ["CSQLite"]),

        // MARK: Card data: numbers, schemes, JWE card-data encryption, encryption at rest, tokens.
        .target(name: "TokenetCard", dependencies: ["COpenSSL", "CTokenetShims", "TokenetFileModes", "TokenetWire"]),

        // MARK: Fault injection: a TCP proxy that delays, partitions, refuses or resets what it carries.
        .target(name: "TokenetFaults", dependencies: ["TokenetTransport"]),
        /// The scenario language (`tokenet scenario`): scripted calls, expectations and faults, parsed and checked.
        .target(
            name: "TokenetScenario", dependencies: ["TokenetWire", "TokenetTransport", "TokenetFaults", "TokenetCard"]),

        // MARK: Node runtime shared by the three parties: configuration, logs, signals, readiness.
        .target(name: "TokenetNode", dependencies: ["TokenetWire", "TokenetTransport", "TokenetRPC", "CTokenetShims"]),

        // MARK: The parties: each node's services, storage and flows.
        .target(name: "TokenetTSP", dependencies: partyDependencies),
        .target(name: "TokenetIssuer", dependencies: partyDependencies),
        .target(name: "TokenetWallet", dependencies: partyDependencies),

        // MARK: Executables.
        .executableTarget(name: "tsp-node", dependencies: ["TokenetNode", "TokenetTSP"]),
        .executableTarget(name: "issuer-node", dependencies: ["TokenetNode", "TokenetIssuer"]),
        .executableTarget(name: "wallet-node", dependencies: ["TokenetNode", "TokenetWallet"]),
        .executableTarget(
            name: "tokenet",
            dependencies: [
                "TokenetNode", "TokenetWire", "TokenetRPC", "TokenetTransport", "TokenetFaults", "TokenetScenario",
                "TokenetCard",
            ]),
        /// Commits numbered transactions until killed; TokenetStorageTests SIGKILL it to test crash recovery.
        .executableTarget(name: "tokenet-storage-crash-helper", dependencies: ["TokenetStorage"]),
        /// RPC benchmark beside the perf anchors (README, "Performance").
        .executableTarget(
            name: "tokenet-bench", dependencies: ["TokenetRPC", "TokenetTransport", "TokenetWire", "TokenetNode"],
            exclude: ["Sittings.md"]),
        /// The notification broker's durable delivery rate and latency over mutual TLS.
        .executableTarget(name: "tokenet-broker-bench", dependencies: ["TokenetTSP", "TokenetNode"]),

        // MARK: Tests.
        /// What the test suites share: the development PKI, the built executables, a child-process watchdog.
        .target(
            name: "TokenetTestSupport", dependencies: ["TokenetTransport", "TokenetStorage"],
            path: "Tests/TokenetTestSupport"),
        .testTarget(name: "TokenetWireTests", dependencies: ["TokenetWire", "TokenetTransport"]),
        .testTarget(name: "TokenetRPCTests", dependencies: ["TokenetRPC", "TokenetTestSupport"]),
        .testTarget(name: "TokenetTSPTests", dependencies: ["TokenetTSP", "TokenetTestSupport"]),
        .testTarget(name: "TokenetIssuerTests", dependencies: ["TokenetIssuer", "TokenetTestSupport"]),
        .testTarget(name: "TokenetWalletTests", dependencies: ["TokenetWallet", "TokenetTestSupport"]),
        .testTarget(name: "TokenetStorageTests", dependencies: ["TokenetStorage", "TokenetTestSupport"]),
        .testTarget(name: "TokenetCardTests", dependencies: ["TokenetCard", "TokenetTransport"]),
        .testTarget(name: "TokenetTransportTests", dependencies: ["TokenetTransport", "TokenetTestSupport"]),
        .testTarget(
            name: "TokenetFaultsTests", dependencies: ["TokenetFaults", "TokenetTransport", "TokenetTestSupport"]),
        .testTarget(name: "TokenetScenarioTests", dependencies: ["TokenetScenario", "TokenetWire", "TokenetFaults"]),
        .testTarget(
            name: "TokenetNodeTests",
            dependencies: [
                "TokenetCard", "TokenetNode", "TokenetRPC", "TokenetTransport", "TokenetWire", "TokenetTestSupport",
            ]),
    ]
)
