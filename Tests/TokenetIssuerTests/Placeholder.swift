import Testing

@testable import TokenetIssuer

@Test func issuerModuleBuilds() {}
