import Testing

@testable import TokenetTSP

@Test func tspModuleBuilds() {}
