import Testing

@testable import TokenetStorage

@Test func storageModuleBuilds() {}
