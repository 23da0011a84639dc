import Testing

@testable import TokenetTransport

/// Runs two engines against each other in memory, moving ciphertext by hand.
struct EnginePair {
    let client: TLSEngine
    let server: TLSEngine

    init(client: TLSConfiguration, server: TLSConfiguration) throws {
        let certs = CertificateFixture.shared
        self.client = try TLSEngine(context: certs.context(client))
        self.server = try TLSEngine(context: certs.context(server))
    }

    /// Moves pending ciphertext both ways; returns how many bytes moved.
    @discardableResult
    func shuttle() -> Int {
        let toServer = client.takeCiphertext()
        server.receiveCiphertext(toServer)
        let toClient = server.takeCiphertext()
        client.receiveCiphertext(toClient)
        return toServer.count + toClient.count
    }

    /// Drives both handshakes until neither side moves bytes any more; returns both statuses.
    func handshake() throws -> (client: TLSEngine.HandshakeStatus, server: TLSEngine.HandshakeStatus) {
        var statuses: (TLSEngine.HandshakeStatus, TLSEngine.HandshakeStatus) = (.needsMoreData, .needsMoreData)
        for _ in 0..<10 {
            statuses = (try client.handshake(), try server.handshake())
            if shuttle() == 0 { break }
        }
        return statuses
    }

    func readAll(_ engine: TLSEngine) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while case .plaintext(let chunk) = try engine.readPlaintext() { bytes += chunk }
        return bytes
    }
}

@Suite struct TLSEngineTests {
    let certs = CertificateFixture.shared

    @Test func handshakeInMemoryExtractsBothIdentities() throws {
        let pair = try EnginePair(client: certs.client("wallet"), server: certs.server("tsp"))
        let status = try pair.handshake()
        #expect(status.client == .complete)
        #expect(status.server == .complete)
        #expect(pair.server.peer == PeerIdentity(role: .wallet, nodeID: "wallet-1"))
        #expect(pair.client.peer == PeerIdentity(role: .tsp, nodeID: "tsp-1"))
    }

    @Test func applicationDataRoundTripsAndCloseNotifyIsSeen() throws {
        let pair = try EnginePair(client: certs.client("issuer"), server: certs.server("tsp"))
        _ = try pair.handshake()
        let message = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try pair.client.writePlaintext(message)
        pair.shuttle()
        #expect(try pair.readAll(pair.server) == message)
        try pair.server.writePlaintext(Array("pong".utf8))
        pair.shuttle()
        #expect(try pair.readAll(pair.client) == Array("pong".utf8))

        pair.client.close()
        pair.shuttle()
        #expect(try pair.server.readPlaintext() == .closed)
    }

    /// The driver sizes the array it decrypts into from `plaintextBound`; a 16 KiB record that arrives in two
    /// pieces must not yield more than the bound announced when its second piece came in.
    @Test func plaintextBoundCoversARecordThatArrivesInPieces() throws {
        let pair = try EnginePair(client: certs.client("wallet"), server: certs.server("tsp"))
        _ = try pair.handshake()
        let message = (0..<(16 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        for split in [5, 100, 9000, 16 * 1024 + 20] {
            try pair.client.writePlaintext(message)
            let record = pair.client.takeCiphertext()
            pair.server.receiveCiphertext(Array(record[..<split]))
            #expect(try pair.server.readPlaintext() == .needsMoreData)
            pair.server.receiveCiphertext(Array(record[split...]))
            let bound = pair.server.plaintextBound
            let received = try pair.readAll(pair.server)
            #expect(received == message)
            #expect(bound >= received.count, "bound \(bound) for \(received.count) bytes, split at \(split)")
        }
        #expect(pair.server.plaintextBound == 0)
    }

    /// The driver reads the socket straight into the engine and sends straight from it, a part at a time when the
    /// kernel takes only part; records must survive both.
    @Test func ciphertextIsReceivedAndSentInPlace() throws {
        let pair = try EnginePair(client: certs.client("wallet"), server: certs.server("tsp"))
        _ = try pair.handshake()
        let message = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 29) }
        try pair.client.writePlaintext(message)
        var moved = 0
        while pair.client.pendingCiphertextCount > 0 {
            // Take at most 1,000 bytes per "send", as a full socket buffer would.
            let pending = pair.client.pendingCiphertext
            let piece = min(1000, pending.count)
            let space = pair.server.ciphertextSpace(atLeast: piece)
            space.copyMemory(from: UnsafeRawBufferPointer(rebasing: pending[..<piece]))
            pair.client.dropCiphertext(piece)
            pair.server.ciphertextReceived(piece)
            moved += piece
        }
        #expect(moved > message.count)
        #expect(try pair.readAll(pair.server) == message)
    }

    @Test func engineRefusesUseAfterAFatalError() throws {
        let pair = try EnginePair(client: certs.client("wallet"), server: certs.server("tsp"))
        _ = try pair.handshake()
        pair.server.receiveEOF()
        #expect(throws: TransportError.self) { try pair.server.readPlaintext() }
        let error = #expect(throws: TransportError.self) { try pair.server.readPlaintext() }
        #expect(error?.code == .invalidState)
    }

    @Test func applicationDataBeforeTheHandshakeIsRefused() throws {
        let pair = try EnginePair(client: certs.client("wallet"), server: certs.server("tsp"))
        let writeError = #expect(throws: TransportError.self) { try pair.client.writePlaintext([1]) }
        #expect(writeError?.code == .invalidState)
        let readError = #expect(throws: TransportError.self) { try pair.server.readPlaintext() }
        #expect(readError?.code == .invalidState)
    }

    @Test func unexpectedEOFCarriesItsCode() throws {
        let pair = try EnginePair(client: certs.client("wallet"), server: certs.server("tsp"))
        _ = try pair.handshake()
        pair.client.receiveEOF()
        let error = #expect(throws: TransportError.self) { try pair.client.readPlaintext() }
        #expect(error?.code == .unexpectedEOF)
    }

    /// A peer that goes away during the handshake (a node restarting) may be there on the next attempt; a refused
    /// certificate is not worth one.
    @Test func aHandshakeCutShortIsNotLastingButARefusalIs() throws {
        let pair = try EnginePair(client: certs.client("wallet"), server: certs.server("tsp"))
        #expect(try pair.client.handshake() == .needsMoreData)
        pair.client.receiveEOF()
        let cut = #expect(throws: TransportError.self) { _ = try pair.client.handshake() }
        #expect(cut?.isLasting == false, "\(String(describing: cut))")

        let refused = try EnginePair(client: certs.client("wallet", untrusted: true), server: certs.server())
        let error = #expect(throws: TransportError.self) { try refused.handshake() }
        #expect(error?.isLasting == true, "\(String(describing: error))")
    }

    @Test func serverRefusesClientWithoutCertificate() throws {
        let pair = try EnginePair(client: certs.client(nil), server: certs.server())
        let error = #expect(throws: TransportError.self) { try pair.handshake() }
        #expect(error?.code == .handshakeFailed)
    }

    @Test func serverRefusesCertificateFromAnotherCA() throws {
        let pair = try EnginePair(client: certs.client("wallet", untrusted: true), server: certs.server())
        let error = #expect(throws: TransportError.self) { try pair.handshake() }
        #expect(error?.code == .handshakeFailed)
        #expect(error?.description.contains("unable to get local issuer certificate") == true)
    }

    @Test func serverRefusesCertificateWithoutTokenetURI() throws {
        let pair = try EnginePair(client: certs.client("plain"), server: certs.server())
        let error = #expect(throws: TransportError.self) { try pair.handshake() }
        #expect(error?.code == .peerIdentity)
        #expect(error?.message.contains("no tokenet://ROLE/ID") == true)
    }

    @Test func serverRefusesRoleItDoesNotAccept() throws {
        let pair = try EnginePair(client: certs.client("wallet"), server: certs.server("tsp", roles: [.issuer]))
        let error = #expect(throws: TransportError.self) { try pair.handshake() }
        #expect(error?.code == .peerIdentity)
        #expect(error?.message.contains("wallet") == true)
    }
}
