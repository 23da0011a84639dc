import Testing

@testable import TokenetWallet

@Test func walletModuleBuilds() {}
