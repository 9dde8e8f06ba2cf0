import AppStore
import AppStoreSigning
import TestSupport
import VerifyService

extension TestPKI {
    /// The verify stage's configuration in these tests: the test app in Sandbox and Production, the
    /// test root trusted.
    static func configuration(chainCache: ChainCachePolicy = .default) throws -> VerifyConfiguration {
        VerifyConfiguration(
            apps: [try AppStoreApp(bundleId: bundleId, appAppleId: appAppleId, environments: [.sandbox, .production])],
            additionalTrustedRoots: [trusted.root], chainCache: chainCache)
    }
}
