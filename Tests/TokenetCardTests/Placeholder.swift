import Testing

@testable import TokenetCard

@Test func cardModuleBuilds() {}
